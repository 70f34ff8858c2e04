import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download` with aria2's `dir=`: files go to a subfolder of `-o`, never outside it.
@Suite(.timeLimit(.minutes(10))) struct DownloadCommandSubfolderTests {
    /// Whether the served file `name` arrived byte-exact at `path` under the output folder.
    private func arrived(_ fixture: DownloadFixture, _ name: String, at path: String) -> Bool {
        let got = FileManager.default.contents(atPath: fixture.output.appendingPathComponent(path).path)
        return got != nil
            && got == FileManager.default.contents(atPath: fixture.files.appendingPathComponent(name).path)
    }

    @Test func filesArriveInTheirSubfoldersAndOneNameInTwoSubfoldersIsTwoFiles() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 4) { 30_000 + $0 }
        let (server, base) = try await fixture.serve()
        let options: [String: [String]] = [
            names[0]: ["dir=sub/deeper"], names[1]: ["dir=sub/deeper", "out=renamed.bin"],
            names[2]: ["dir=other", "out=same.bin"], names[3]: ["out=same.bin"],
        ]
        let list = try fixture.inputFile(names, base: base) { options[$0] ?? [] }
        let output = try await runProduct(
            "jobkit", arguments: ["download", "-i", list.path, "-o", fixture.output.path])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(arrived(fixture, names[0], at: "sub/deeper/\(names[0])"))
        #expect(arrived(fixture, names[1], at: "sub/deeper/renamed.bin"))
        #expect(arrived(fixture, names[2], at: "other/same.bin"))
        #expect(arrived(fixture, names[3], at: "same.bin"))
        #expect(output.stdout.contains("sub/deeper/renamed.bin"), "rows show the path: \(output.stdout)")
        #expect(output.stdout.split(separator: "\n").last?.hasPrefix("downloaded 4 files") == true, "\(output.stdout)")
        _ = server
    }

    @Test(arguments: ["../x", "/etc", "a/../../b"])
    func aDirOutsideTheOutputFolderIsAUsageErrorAndNothingIsCreated(_ dir: String) async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let list = fixture.folder.appendingPathComponent("list.txt")
        try Data("https://e.com/a.bin\n  dir=\(dir)\n".utf8).write(to: list)
        let output = try await runProduct(
            "jobkit", arguments: ["download", "-i", list.path, "-o", fixture.output.path])
        #expect(output.status == 64, "\(output.stderr)")
        #expect(output.stderr.contains("\(list.path):2: dir="), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fixture.output.path), "nothing was created")
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("x").path))
    }

    @Test func aSymbolicLinkPlantedAtASubfolderIsNeverFollowed() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("f", count: 3) { 20_000 + $0 }
        let (server, base) = try await fixture.serve()
        let outside = fixture.folder.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: fixture.output.appendingPathComponent("real"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: fixture.output.appendingPathComponent("link"), withDestinationURL: outside)
        try FileManager.default.createSymbolicLink(
            at: fixture.output.appendingPathComponent("real/deeper"), withDestinationURL: outside)
        let options = [names[0]: ["dir=link"], names[1]: ["dir=real/deeper/x"]]
        let list = try fixture.inputFile(names, base: base) { options[$0] ?? [] }
        let output = try await runProduct(
            "jobkit", arguments: ["download", "-i", list.path, "-o", fixture.output.path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.contains("error: link/\(names[0]) ("), "\(output.stderr)")
        #expect(output.stderr.contains("never reached through a link"), "\(output.stderr)")
        #expect(output.stderr.contains("error: real/deeper/x/\(names[1]) ("), "\(output.stderr)")
        #expect(output.stderr.hasSuffix("error: 2 of 3 downloads failed\n"), "\(output.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing written outside")
        #expect(arrived(fixture, names[2], at: names[2]))
        _ = server
    }

    @Test func killedMidRunThenRunAgainResumesFilesInSubfolders() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let small = try fixture.make("small", count: 6) { 1000 + $0 }
        let large = try fixture.make("large", count: 2) { 20 << 20 | $0 }
        let (server, base) = try await fixture.serve()
        let list = try fixture.inputFile(small + large, base: base) { name in
            name.hasPrefix("large") ? ["dir=big/ones"] : ["dir=small"]
        }
        let arguments = ["download", "-i", list.path, "-o", fixture.output.path, "-j", "2"]
        let first = try LaunchedProcess(arguments)
        let partial = await first.send(SIGKILL) {
            large.contains { fixture.partSize("big/ones/" + $0) >= 1 << 20 }
        }
        #expect(await first.wait() == SIGKILL, "\(first.stderr)")
        try #require(partial, "the run ended before a large file was partly downloaded: \(first.stdout.suffix(300))")
        let partialBefore = large.filter { fixture.partSize("big/ones/" + $0) > 0 }
        let requestsBefore = fixture.requests().count

        let second = try await runProduct("jobkit", arguments: arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(small.allSatisfy { arrived(fixture, $0, at: "small/" + $0) })
        #expect(large.allSatisfy { arrived(fixture, $0, at: "big/ones/" + $0) })
        let after = fixture.requests(from: requestsBefore)
        for name in small {
            #expect(!after.contains { $0.contains("/files/\(name) ") }, "\(name) was complete: not fetched again")
        }
        #expect(!partialBefore.isEmpty)
        for name in partialBefore {
            #expect(
                after.contains { $0.contains("/files/\(name) range=bytes=") && !$0.contains("range=bytes=0-") },
                "\(name) resumed with a range: \(after.filter { $0.contains(name) })")
        }
        _ = server
    }
}
