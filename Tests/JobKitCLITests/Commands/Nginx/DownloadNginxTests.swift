import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download` against Debian's nginx — skipped, with the reason printed, where nginx is not installed.
@Suite(
    .timeLimit(.minutes(10)),
    .enabled(if: NginxServer.isInstalled, "nginx is not installed at /usr/sbin/nginx (apt-get install nginx)"))
struct DownloadNginxTests {
    private func start(_ fixture: DownloadFixture, limitRate: String? = nil) throws -> NginxServer {
        try NginxServer(
            root: fixture.files, accessLog: fixture.accessLog,
            workDirectory: fixture.folder.appendingPathComponent("nginx"),
            limitRate: limitRate)
    }

    @Test func twoHundredSmallAndFourLargeFilesArriveByteExact() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names =
            try fixture.make("small", count: 200) { 1 + $0 * 397 % 50_000 }
            + fixture.make("large", count: 4) {
                16 << 20 | $0
            }
        let nginx = try start(fixture)
        let list = try fixture.inputFile(names, base: nginx.baseURL)
        let output = try await runProduct(
            "jobkit", arguments: ["download", "-i", list.path, "-o", fixture.output.path, "--quiet"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.isEmpty, "--quiet")
        #expect(names.allSatisfy(fixture.arrived))
    }

    @Test func killedMidRunThenRunAgainResumesWithRangesNginxValidates() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let small = try fixture.make("small", count: 10) { 3000 + $0 }
        let large = try fixture.make("large", count: 4) { 12 << 20 | $0 }
        let nginx = try start(fixture, limitRate: "16m")  // each answer takes most of a second
        let list = try fixture.inputFile(small + large, base: nginx.baseURL)
        let arguments = ["download", "-i", list.path, "-o", fixture.output.path, "-j", "4"]
        let first = try LaunchedProcess(arguments)
        let partial = await first.send(SIGKILL) { large.contains { fixture.partSize($0) >= 1 << 20 } }
        #expect(await first.wait() == SIGKILL, "\(first.stderr)")
        try #require(partial, "the run ended before a large file was partly downloaded")
        let completedBefore = (small + large).filter(fixture.arrived)
        let partialBefore = large.filter { fixture.partSize($0) > 0 }
        let requestsBefore = fixture.requests().count

        let second = try await runProduct("jobkit", arguments: arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect((small + large).allSatisfy(fixture.arrived))
        let after = fixture.requests(from: requestsBefore)
        for name in completedBefore {
            #expect(!after.contains { $0.contains("/\(name) ") }, "\(name) was complete: not fetched again")
        }
        #expect(!partialBefore.isEmpty)
        for name in partialBefore {
            #expect(
                after.contains { $0.contains("/\(name) range=bytes=") && $0.hasSuffix("status=206") },
                "\(name) resumed with a range: \(after.filter { $0.contains(name) })")
        }
    }
}
