import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// aria2's speeds: `--max-overall-download-limit`, `--max-download-limit` and the input file's
/// `max-download-limit=`.
@Suite struct SpeedLimitTests {
    @Test(
        arguments: [
            ("0", nil), ("1", 1), ("500K", 500 << 10), ("500k", 500 << 10), ("2M", 2 << 20), ("2m", 2 << 20),
            ("1048576", 1 << 20), (" 64K ", 64 << 10), ("0M", nil), ("1048576M", 1 << 40),
        ] as [(String, Int64?)])
    func readsBytesASecondWithAria2sSuffixes(text: String, bytes: Int64?) throws {
        #expect(try SpeedLimit.parse(text) == bytes)
    }

    @Test(arguments: ["", "K", "-1", "1.5M", "2G", "10KB", "abc", "1048577M", "99999999999999999999", "٣K"])
    func refusesWhatIsNotASpeed(text: String) {
        #expect(throws: SpeedLimit.ParseError.self) { try SpeedLimit.parse(text) }
    }

    @Test func anInputFileGivesOneFileItsOwnLimit() throws {
        let text = """
            https://example.com/a
              max-download-limit=256K
            https://example.com/b
              max-download-limit=0
            https://example.com/c
            """
        let entries = try DownloadInputFile.parse(text, source: "list.txt")
        #expect(entries.map(\.maxBytesPerSecond) == [256 << 10, 0, nil])
        #expect(throws: DownloadInputFile.ParseError.self) {
            try DownloadInputFile.parse("https://example.com/a\n  max-download-limit=fast\n", source: "list.txt")
        }
        do {
            _ = try DownloadInputFile.parse("https://example.com/a\n  max-download-limit=2G\n", source: "list.txt")
        } catch {
            #expect(error.localizedDescription.hasPrefix("list.txt:2: max-download-limit=: '2G' is not a speed"))
        }
    }

    @Test func badSpeedsOnTheCommandLineExit64NamingTheOption() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases = [
            (["--max-overall-download-limit", "fast"], "--max-overall-download-limit: 'fast' is not a speed"),
            (["--max-download-limit=-5"], "--max-download-limit: '-5' is not a speed"),
            (["--max-download-limit", "3T"], "--max-download-limit: '3T' is not a speed"),
        ]
        for (arguments, message) in cases {
            let output = try await runProduct(
                "jobkit", arguments: ["download", "-o", folder.path, "http://127.0.0.1:1/x"] + arguments)
            #expect(output.status == 64, "\(arguments): \(output.stderr)")
            #expect(output.stderr.contains(message), "\(arguments): \(output.stderr)")
        }
    }

    @Test func theHelpListsTheSpeedAndTLSOptions() async throws {
        let output = try await runProduct("jobkit", arguments: ["download", "--help"])
        #expect(output.status == 0, "\(output.stderr)")
        for option in ["--max-overall-download-limit", "--max-download-limit", "--ca-certificate", "--http1.1"] {
            #expect(output.stdout.contains(option), "\(option)")
        }
    }
}
