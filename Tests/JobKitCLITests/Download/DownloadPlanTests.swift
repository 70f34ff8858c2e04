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

    @Test func oneNameInTwoSubfoldersIsTwoFilesAndTheOutputFolderComesFirst() throws {
        var entries = [
            DownloadInputFile.Entry(url: URL(string: "https://b.com/x/a.bin")!, line: 1),
            DownloadInputFile.Entry(url: URL(string: "https://b.com/y/a.bin")!, line: 3),
            DownloadInputFile.Entry(url: URL(string: "https://b.com/z/a.bin")!, line: 5),
        ]
        entries[0].subfolder = "one"
        entries[1].subfolder = "two/deeper"
        let plan = try DownloadPlan.make(urls: [], entries: entries, source: "in.txt", checksumProblem: { _ in nil })
        #expect(plan.items.map(\.path) == ["one/a.bin", "two/deeper/a.bin", "a.bin"])
        #expect(plan.bySubfolder.map(\.subfolder) == [nil, "one", "two/deeper"])
        #expect(plan.bySubfolder.map { $0.items.map(\.url.path) } == [["/z/a.bin"], ["/x/a.bin"], ["/y/a.bin"]])
        entries[2].subfolder = "one"
        #expect(
            throws: DownloadPlan.Problem(
                message: "in.txt:1 and in.txt:5 both save to 'one/a.bin': give one of them out=NAME in an input file")
        ) {
            try DownloadPlan.make(urls: [], entries: entries, source: "in.txt", checksumProblem: { _ in nil })
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

    @Test func serverNamesReplaceURLNamesOnlyWhenFreeAndNeverAnOutName() throws {
        let entries = [
            DownloadInputFile.Entry(url: URL(string: "https://e.com/a")!, name: "kept.bin", line: 1),
            DownloadInputFile.Entry(url: URL(string: "https://e.com/b")!, line: 2),
            DownloadInputFile.Entry(url: URL(string: "https://e.com/c")!, line: 3),
            DownloadInputFile.Entry(url: URL(string: "https://e.com/d")!, line: 4),
        ]
        let plan = try DownloadPlan.make(urls: [], entries: entries, source: "f", checksumProblem: { _ in nil })
        let named = plan.naming(["server-a", "report.pdf", "report.pdf", "kept.bin"])
        #expect(named.items.map(\.name) == ["kept.bin", "report.pdf", "c", "d"])
    }

    @Test(
        arguments: [
            (#"attachment; filename="../../etc/passwd""#, "passwd"),
            (#"attachment; filename="""#, nil),
            (#"attachment; filename="..""#, nil),
            ("attachment; filename*=UTF-8''a%00b%1B.txt", "a_b_.txt"),
            (#"attachment; filename=".jobkit-downloads.journal""#, "_.jobkit-downloads.journal"),
            (#"attachment; filename="x.part""#, "x.part_"),
        ] as [(String, String?)])
    func hostileServerNamesAreMadeSafe(_ header: String, _ expected: String?) {
        #expect(DownloadNaming.name(fromContentDisposition: header) == expected)
    }

    @Test func aVeryLongServerNameIsShortenedKeepingItsExtension() throws {
        let name = try #require(
            DownloadNaming.name(
                fromContentDisposition: "attachment; filename=\(String(repeating: "é", count: 300)).tar.gz"))
        #expect(name.utf8.count <= 255 && name.hasSuffix(".tar.gz"))
    }
}
