import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// aria2-style input files: URLs, indented options, comments, and errors that name their line.
@Suite struct DownloadInputFileTests {
    private let hex = String(repeating: "ab", count: 32)

    @Test func readsURLsWithTheirOptionsAndSkipsCommentsAndBlankLines() throws {
        let text = """
            # nightly
            https://example.com/a/disk.img
              out=nightly.img
            \tchecksum=sha-256=\(hex)

            http://127.0.0.1:8080/files/notes.txt\r
              # a comment between options
            https://example.com/c
            """
        let entries = try DownloadInputFile.parse(text, source: "list.txt")
        #expect(entries.count == 3)
        #expect(
            entries[0]
                == .init(
                    url: URL(string: "https://example.com/a/disk.img")!, name: "nightly.img",
                    checksum: "sha-256=\(hex)", line: 2, optionLines: ["out": 3, "checksum": 4]))
        #expect(entries[1].url.absoluteString == "http://127.0.0.1:8080/files/notes.txt" && entries[1].line == 6)
        #expect(entries[1].name == nil && entries[1].checksum == nil)
        #expect(entries[2].line == 8)
    }

    @Test func headersRefererAndUserAgentAreHeadersAndHeaderRepeats() throws {
        let text = """
            https://example.com/a
              header=Authorization: Bearer x
              HEADER=Cookie: a=1
              referer=https://example.com/
              user-agent=tool/2
            https://example.com/b
            """
        let entries = try DownloadInputFile.parse(text, source: "list.txt")
        #expect(
            entries[0].headers.map(\.description) == [
                "Authorization: Bearer x", "Cookie: a=1", "Referer: https://example.com/", "User-Agent: tool/2",
            ])
        #expect(entries[1].headers.isEmpty)
    }

    @Test(arguments: [
        ("https://e.com/a\n  header=Range: bytes=0-", "sets this header itself"),
        ("https://e.com/a\n  header=NoColon", "'Name: value'"),
        ("https://e.com/a\n  header=", "header= needs a value"),
        ("https://e.com/a\n  referer=a\u{7F}b", "control character"),
        ("https://e.com/a\n  user-agent=x\n  user-agent=y", "'user-agent' given twice"),
    ])
    func unsendableHeadersNameTheirLine(_ text: String, _ message: String) {
        let error = #expect(throws: DownloadInputFile.ParseError.self) {
            try DownloadInputFile.parse(text, source: "f")
        }
        #expect(error?.line == 2 || error?.line == 3)
        #expect(error?.message.contains(message) == true, "\(String(describing: error?.message))")
    }

    @Test func dirIsASubfolderNormalizedAndDotIsTheOutputFolder() throws {
        let text = """
            https://e.com/a
              dir=sub/deeper
              out=x.bin
            https://e.com/b
              dir=./sub//deeper/
            https://e.com/c
              dir=.
            """
        let entries = try DownloadInputFile.parse(text, source: "f")
        #expect(entries.map(\.subfolder) == ["sub/deeper", "sub/deeper", nil])
        #expect(entries[0].name == "x.bin")
    }

    @Test func aHundredHeadersAreReadAndOneMoreIsAnErrorNamingItsLine() throws {
        let hundred = (1...100).map { "  header=X-H\($0): v" }
        let entries = try DownloadInputFile.parse((["https://e.com/a"] + hundred).joined(separator: "\n"), source: "f")
        #expect(entries[0].headers.count == 100)
        for extra in ["  header=X-H101: v", "  referer=https://e.com/", "  user-agent=tool/1"] {
            let text = (["https://e.com/a"] + hundred + [extra, "https://e.com/b"]).joined(separator: "\n")
            let error = #expect(throws: DownloadInputFile.ParseError.self) {
                try DownloadInputFile.parse(text, source: "f")
            }
            #expect(error?.line == 102)
            #expect(
                error?.message.contains("more than 100 headers for one URL") == true, "\(String(describing: error))")
        }
        // The count is per URL.
        let two = (["https://e.com/a"] + hundred + ["https://e.com/b"] + hundred).joined(separator: "\n")
        #expect(try DownloadInputFile.parse(two, source: "f").map(\.headers.count) == [100, 100])
    }

    @Test func aBadChecksumNamesItsChecksumLine() throws {
        let text = "https://e.com/a\n  out=a\n  checksum=sha-256=abc\n"
        let entries = try DownloadInputFile.parse(text, source: "in.txt")
        #expect(entries[0].optionLines["checksum"] == 3)
        #expect(throws: DownloadPlan.Problem(message: "in.txt:3: wrong")) {
            try DownloadPlan.make(urls: [], entries: entries, source: "in.txt", checksumProblem: { _ in "wrong" })
        }
    }

    @Test func anEmptyFileHasNoEntries() throws {
        #expect(try DownloadInputFile.parse("", source: "x").isEmpty)
        #expect(try DownloadInputFile.parse("\n\n# only comments\n", source: "x").isEmpty)
    }

    @Test(arguments: [
        ("  out=a", 1, "an option line before any URL"),
        ("https://e.com/a\n  out", 2, "expected an option as KEY=VALUE"),
        ("https://e.com/a\n  bogus=/tmp", 2, "unknown option 'bogus'"),
        ("https://e.com/a\n  dir=/etc", 2, "absolute path"),
        ("https://e.com/a\n  dir=../x", 2, "'..' is not allowed"),
        ("https://e.com/a\n  dir=a/../../b", 2, "'..' is not allowed"),
        ("https://e.com/a\n  dir=", 2, "dir= needs a value"),
        ("https://e.com/a\n  dir=a/.jobkit-x", 2, "kept for the manager"),
        ("https://e.com/a\n  dir=a\u{1}b", 2, "control character"),
        ("https://e.com/a\n  dir=" + Array(repeating: "d", count: 17).joined(separator: "/"), 2, "16 folders deep"),
        ("https://e.com/a\n  out=a\n  out=b", 3, "'out' given twice"),
        ("https://e.com/a\n  out=../etc/passwd", 2, "no '/'"),
        ("https://e.com/a\n  out=..", 2, "'.' or '..'"),
        ("https://e.com/a\n  out=x.part", 2, "kept for partial downloads"),
        ("https://e.com/a\n  checksum=", 2, "checksum= needs a value"),
        ("\n\nhttps://a.com/x\thttps://b.com/x", 3, "one URL per line"),
        ("ftp://e.com/a", 1, "not an http:// or https:// URL"),
        ("just words", 1, "one URL per line"),
        ("file:///etc/passwd", 1, "not an http:// or https:// URL"),
    ])
    func errorsNameTheLine(text: String, line: Int, message: String) {
        #expect {
            try DownloadInputFile.parse(text, source: "in.txt")
        } throws: { error in
            guard let error = error as? DownloadInputFile.ParseError else { return false }
            return error.line == line && error.message.contains(message)
                && error.localizedDescription.hasPrefix("in.txt:\(line): ")
        }
    }

    @Test func aFileThatCannotBeReadIsOneError() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-in-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: DownloadInputFile.ParseError(source: folder.path, line: 0, message: "is a directory")) {
            try DownloadInputFile.read(folder.path)
        }
        let missing = folder.appendingPathComponent("missing").path
        #expect(throws: DownloadInputFile.ParseError(source: missing, line: 0, message: "no such file")) {
            try DownloadInputFile.read(missing)
        }
        let binary = folder.appendingPathComponent("binary")
        try Data([0xFF, 0xFE, 0x00, 0xC3]).write(to: binary)
        #expect(throws: DownloadInputFile.ParseError(source: binary.path, line: 0, message: "not UTF-8 text")) {
            try DownloadInputFile.read(binary.path)
        }
    }
}
