import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download -x N` against Debian's nginx limiting each connection — skipped, with the reason
/// printed, where nginx is not installed.
@Suite(
    .timeLimit(.minutes(10)),
    .enabled(if: NginxServer.isInstalled, "nginx is not installed at /usr/sbin/nginx (apt-get install nginx)"))
struct DownloadConnectionsTests {
    private func start(_ fixture: DownloadFixture, limitRate: String) throws -> NginxServer {
        try NginxServer(
            root: fixture.files, accessLog: fixture.accessLog,
            workDirectory: fixture.folder.appendingPathComponent("nginx"), limitRate: limitRate)
    }

    /// The bytes the segment map beside `name`'s `.part` says are written, and the file's length.
    private static func segmentProgress(_ fixture: DownloadFixture, _ name: String) -> (done: Int, total: Int)? {
        let path = fixture.output.appendingPathComponent(name + ".part.meta").path
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let map = object["segments"] as? [String: Any], let total = map["length"] as? Int,
            let segments = map["segments"] as? [[String: Any]]
        else { return nil }
        return (segments.reduce(0) { $0 + ($1["done"] as? Int ?? 0) }, total)
    }

    /// The byte ranges the `.part.meta`'s segment map says are still missing, as closed ranges.
    private static func missingRanges(_ fixture: DownloadFixture, _ name: String) -> [ClosedRange<Int>] {
        let path = fixture.output.appendingPathComponent(name + ".part.meta").path
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let map = object["segments"] as? [String: Any], let segments = map["segments"] as? [[String: Any]]
        else { return [] }
        return segments.compactMap { segment in
            guard let start = segment["start"] as? Int, let end = segment["end"] as? Int,
                let done = segment["done"] as? Int, start + done < end
            else { return nil }
            return (start + done)...(end - 1)
        }
    }

    /// What a loaded machine cannot change: `-x 4` splits the file into ranges fetched on their own
    /// connections, and both it and `-x 1` end byte-exact. How much faster four connections are is a
    /// rate: measured by the benchmark (`Benchmarks/Networking/connections.sh`, BENCHMARKS.md), not
    /// here, where every other test shares the two cores.
    @Test func fourConnectionsFetchRangesAndOneConnectionTheWholeFileBothByteExact() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let names = try fixture.make("big", count: 1) { _ in 8 << 20 }
        // nginx sends a second's worth at once, then 1 MiB/s a connection.
        let nginx = try start(fixture, limitRate: "1m")
        let url = nginx.baseURL.appendingPathComponent(names[0]).absoluteString
        for connections in [4, 1] {
            try? FileManager.default.removeItem(at: fixture.output)
            let requestsBefore = fixture.requests().count
            let output = try await runProduct(
                "jobkit", arguments: ["download", "-x", "\(connections)", "-o", fixture.output.path, "--quiet", url])
            #expect(output.status == 0, "\(output.stderr)")
            #expect(fixture.arrived(names[0]), "-x \(connections): byte-exact")
            if connections == 4 {
                // nginx logs a request once it has ended, which may be a moment after the client exits.
                await eventually("nginx logged four ranged requests") {
                    fixture.requests(from: requestsBefore).filter {
                        $0.contains("range=bytes=") && $0.hasSuffix("status=206")
                    }.count >= 4
                }
            }
        }
    }

    @Test func killedMidwayThenRunAgainFetchesOnlyTheMissingRanges() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        // 16 MiB: nginx's first second is a burst of 1 MiB a connection (4 MiB), the other 12 take 3 s
        // more; the map is written every MiB. Killed once it says half is done: past the burst, with
        // two seconds of the run left to see that in (a loaded machine may not look for a while).
        let names = try fixture.make("big", count: 1) { _ in 16 << 20 }
        let nginx = try start(fixture, limitRate: "1m")
        let url = nginx.baseURL.appendingPathComponent(names[0]).absoluteString
        let arguments = ["download", "-x", "4", "-o", fixture.output.path, "--quiet", url]
        let first = try LaunchedProcess(arguments)
        let midway = await first.send(SIGKILL) {
            guard let (done, total) = Self.segmentProgress(fixture, names[0]) else { return false }
            return done >= total / 2
        }
        #expect(await first.wait() == SIGKILL, "\(first.stderr)")
        try #require(midway, "the run ended before it was midway")
        let (doneBefore, total) = try #require(Self.segmentProgress(fixture, names[0]))
        #expect(doneBefore < total)
        let missing = Self.missingRanges(fixture, names[0])
        // nginx logs a request when it ends: the killed run's four (the first `bytes=0-` and three
        // ranges) once it has seen their connections close.
        await eventually("nginx logged the killed run's requests") { fixture.requests().count >= 4 }
        let requestsBefore = fixture.requests().count

        let second = try await runProduct("jobkit", arguments: arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(fixture.arrived(names[0]))
        // The last of them may be logged a moment after the client has its bytes and exits.
        await eventually("nginx logged the second run's requests") {
            Self.bytesAsked(fixture.requests(from: requestsBefore)) >= total - doneBefore
        }
        let after = fixture.requests(from: requestsBefore)
        #expect(!after.isEmpty)
        var asked = 0
        for line in after {
            // `GET /big0.bin range=bytes=A-B status=206`: every request is a range, none from byte 0.
            guard let range = line.split(separator: " ").first(where: { $0.hasPrefix("range=bytes=") }),
                let bounds = Optional(range.dropFirst("range=bytes=".count).split(separator: "-")),
                bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1])
            else {
                Issue.record("not a bounded range: \(line)")
                continue
            }
            #expect(first > 0 && line.hasSuffix("status=206"), "\(line)")
            // Only missing bytes are asked for: each range lies within a part the map says is missing
            // (a retried range, after a timeout on a loaded machine, asks the rest of its part again).
            #expect(missing.contains { $0.contains(first) && $0.contains(last) }, "\(line) is not missing: \(missing)")
            asked += last - first + 1
        }
        #expect(asked >= total - doneBefore, "asked \(asked) bytes; \(total - doneBefore) were missing")
    }

    /// The bytes the `range=bytes=A-B` requests of `lines` asked for.
    static func bytesAsked(_ lines: [Substring]) -> Int {
        lines.reduce(0) { sum, line in
            guard let range = line.split(separator: " ").first(where: { $0.hasPrefix("range=bytes=") }) else {
                return sum
            }
            let bounds = range.dropFirst("range=bytes=".count).split(separator: "-")
            guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]) else { return sum }
            return sum + last - first + 1
        }
    }
}
