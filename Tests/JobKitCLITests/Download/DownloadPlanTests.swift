import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// File names from URLs, and the plan's checks before anything is fetched.
@Suite struct DownloadPlanTests {
    @Test func namesComeFromTheLastPathComponentDecoded() {
        func name(_ text: String) -> String { DownloadNaming.name(for: URL(string: text)!) }
        #expect(name("https://e.com/a/b/file.bin") == "file.bin")
        #expect(name("https://e.com/a/my%20file.txt?x=1#y") == "my file.txt")
        #expect(name("https://e.com/") == "index.html")
        #expect(name("https://e.com") == "index.html")
        #expect(name("https://e.com/a/%2E%2E") == "index.html")
        #expect(name("https://e.com/a%2Fb") == "a_b")
        #expect(name("https://e.com/x%0Ay") == "x_y")
        #expect(name("https://e.com/x.part") == "x.part_")
        #expect(name("https://e.com/" + String(repeating: "n", count: 400)).utf8.count == 255)
    }

    @Test func twoDownloadsToOneNameAreAUsageErrorNamingBoth() {
        let entries = [DownloadInputFile.Entry(url: URL(string: "https://b.com/x/a.bin")!, line: 4)]
        #expect(throws: DownloadPlan.Problem.self) {
            try DownloadPlan.make(
                urls: ["https://a.com/a.bin"], entries: entries, source: "in.txt", checksumProblem: { _ in nil })
        }
        do {
            _ = try DownloadPlan.make(
                urls: ["https://a.com/a.bin"], entries: entries, source: "in.txt", checksumProblem: { _ in nil })
        } catch {
            #expect(error.message.hasPrefix("URL 1 and in.txt:4 both save to 'a.bin'"))
        }
    }

    @Test func badURLsAndChecksumsAreNamed() {
        #expect(throws: DownloadPlan.Problem(message: "URL 2: not an http:// or https:// URL: 'nope'")) {
            try DownloadPlan.make(
                urls: ["https://a.com/x", "nope"], entries: [], source: nil, checksumProblem: { _ in nil })
        }
        let entries = [DownloadInputFile.Entry(url: URL(string: "https://b.com/y")!, checksum: "md5=1", line: 9)]
        #expect(throws: DownloadPlan.Problem(message: "in.txt:9: unsupported")) {
            try DownloadPlan.make(urls: [], entries: entries, source: "in.txt", checksumProblem: { _ in "unsupported" })
        }
    }
}
