import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `jobkit download`'s per-file options, run as a user runs them: headers from an input file reach the
/// server on every request, every checksum algorithm verifies, and `--content-disposition` names files
/// as the server suggests — safely, whatever it suggests.
@Suite(.timeLimit(.minutes(10))) struct DownloadCommandOptionsTests {
    private func download(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = try LaunchedProcess(["download"] + arguments)
        let status = await process.wait()
        return (status, process.output)
    }

    private func inputFile(_ text: String) throws -> URL {
        let file = try scratchFolder().appendingPathComponent("list.txt")
        try Data(text.utf8).write(to: file)
        return file
    }

    @Test func headersFromTheInputFileReachTheServerOnEveryRequest() async throws {
        let bytes = pattern(60_000)
        let server = try ScriptedServer { request, index in
            guard request.headers["authorization"] == "Bearer s3cret" else { return .respond(401) }
            // The first answer drops; the retry resumes with a range, and must carry the headers too.
            if index == 0 { return .drop(headers: ["ETag": "\"v1\""], body: bytes, sent: 20_000) }
            let start = 20_000
            return .respond(
                206, headers: ["ETag": "\"v1\"", "Content-Range": "bytes \(start)-\(bytes.count - 1)/\(bytes.count)"],
                body: bytes.subdata(in: start..<bytes.count))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let list = try inputFile(
            """
            \(server.url("private.bin").absoluteString)
              header=Authorization: Bearer s3cret
              header=X-Trace: one
              referer=https://example.com/page
              user-agent=jobkit-test/1.0

            """)

        let (status, output) = try await download(["-o", folder.path, "-i", list.path, "--retry", "1"])

        #expect(status == 0, "\(output)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("private.bin")) == bytes)
        let requests = server.requests
        #expect(requests.count == 2)
        for request in requests {
            #expect(request.headers["authorization"] == "Bearer s3cret")
            #expect(request.headers["x-trace"] == "one")
            #expect(request.headers["referer"] == "https://example.com/page")
            #expect(request.headers["user-agent"] == "jobkit-test/1.0")
        }
        #expect(requests.last?.headers["range"] == "bytes=20000-")
    }

    @Test(arguments: [
        ("header=Range: bytes=0-", "reserved"),
        ("header=Host: evil.example", "reserved"),
        ("header=No colon here", "Name: value"),
        ("header=Bad Name: x", "letters, digits"),
        ("dir=../outside", "never outside it"),
    ])
    func aHeaderThatCannotBeSentOrADirIsAUsageError(_ option: String, _ expected: String) async throws {
        let list = try inputFile("https://example.com/a.bin\n  \(option)\n")
        let (status, output) = try await download(["-o", try scratchFolder().path, "-i", list.path])
        #expect(status == 64, "\(output)")
        #expect(output.contains(":2: "), "\(output)")
        #expect(
            output.contains(expected) || (expected == "reserved" && output.contains("sets this header")), "\(output)")
        #expect(!output.contains("evil.example") || option.contains("Host"))
    }

    @Test func everyChecksumAlgorithmVerifiesTheFileAndAWrongOneFailsIt() async throws {
        let bytes = pattern(5_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let folder = try scratchFolder()
        var lines: [String] = []
        for algorithm in Checksum.Algorithm.allCases {
            let right = Checksum.digest(algorithm, of: bytes)
            let wrong = Checksum.digest(algorithm, of: bytes.dropLast())
            lines += [server.url("right-\(algorithm.rawValue)").absoluteString, "  checksum=\(right)"]
            lines += [server.url("wrong-\(algorithm.rawValue)").absoluteString, "  checksum=\(wrong)"]
        }
        let list = try inputFile(lines.joined(separator: "\n") + "\n")

        let (status, output) = try await download(["-o", folder.path, "-i", list.path, "--json"])

        #expect(status == 1, "\(output)")
        for algorithm in Checksum.Algorithm.allCases {
            let right = folder.appendingPathComponent("right-\(algorithm.rawValue)")
            #expect(try Data(contentsOf: right) == bytes, "\(algorithm)")
            #expect(
                !FileManager.default.fileExists(
                    atPath: folder.appendingPathComponent("wrong-\(algorithm.rawValue)").path))
        }
        #expect(output.contains("6 of 12 downloads failed"), "\(output)")
    }

    @Test func contentDispositionNamesFilesAndHostileNamesStayInTheFolder() async throws {
        let long = String(repeating: "n", count: 400) + ".iso"
        let suggestions: [String: String] = [
            "/plain": #"attachment; filename="report 2026.pdf""#,
            "/extended": #"attachment; filename="fallback.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt"#,
            "/escape": #"attachment; filename="../../etc/passwd""#,
            "/empty": #"attachment; filename="""#,
            "/long": "attachment; filename=\"\(long)\"",
            "/nul": "attachment; filename*=UTF-8''a%00b%0A.txt",
            "/journal": #"attachment; filename=".jobkit-downloads.journal""#,
        ]
        let server = try ScriptedServer { request, _ in
            var headers: [String: String] = [:]
            headers["Content-Disposition"] = suggestions[request.path]
            return .respond(200, headers: headers, body: Data(request.path.utf8))
        }
        defer { server.stop() }
        let root = try scratchFolder()
        let folder = root.appendingPathComponent("out")
        let urls = suggestions.keys.sorted().map { server.url(String($0.dropFirst())).absoluteString }

        let (status, output) = try await download(["-o", folder.path, "--content-disposition"] + urls)

        #expect(status == 0, "\(output)")
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(names.contains("report 2026.pdf"))
        #expect(names.contains("résumé.txt"), "filename*= wins over filename=")
        #expect(names.contains("passwd"), "only the last component: nothing outside the folder")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("etc").path))
        #expect(names.contains("empty"), "an empty suggestion keeps the URL's name")
        #expect(names.contains("a_b_.txt"), "control characters replaced")
        #expect(names.contains("_.jobkit-downloads.journal"))
        let shortened = try #require(names.first { $0.hasPrefix("nnnn") })
        #expect(shortened.utf8.count == 255 && shortened.hasSuffix(".iso"))
        #expect(try Data(contentsOf: folder.appendingPathComponent("passwd")) == Data("/escape".utf8))
    }

    @Test func theHelpListsTheNewOptions() async throws {
        let help = try await runProduct("jobkit", arguments: ["download", "--help"])
        let texts = ["--content-disposition", "header=", "referer=", "user-agent=", "sha-512", "Content-Disposition"]
        for text in texts + ["dir=PATH", "never outside -o"] {
            #expect(help.stdout.contains(text), "\(text): \(help.stdout)")
        }
    }
}
