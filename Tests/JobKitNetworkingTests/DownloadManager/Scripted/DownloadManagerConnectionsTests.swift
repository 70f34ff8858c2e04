import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An item's connections as the manager's slots, end to end on a transport that holds bodies until
/// enough transfers run at once: an item keeps only the slots its download uses.
@Suite struct DownloadManagerConnectionsTests {
    private func manager(_ transport: GatedTransport, folder: URL, maxConcurrent: Int) throws -> DownloadManager {
        let log = UpdateLog()
        var configuration = testConfiguration(log, maxConcurrent: maxConcurrent)
        configuration.scheduler = TestScheduler()
        configuration.httpTransport = transport
        return try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
    }

    /// The answer of a server with ranges (a strong ETag) or without: a `206` of the range asked
    /// (`bytes=A-` or `bytes=A-B`), or the whole file with a `200`.
    private static func answer(_ request: URLRequest, body: Data, ranges: Bool) -> ScriptedTransport.Answer {
        guard ranges, let range = request.value(forHTTPHeaderField: "Range") else {
            return .init(status: 200, body: body)
        }
        let bounds = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        let start = Int(bounds[0]) ?? 0
        let end = bounds.count > 1 ? Int(bounds[1]) ?? body.count - 1 : body.count - 1
        return .init(
            status: 206, headers: ["ETag": "\"v1\"", "Content-Range": "bytes \(start)-\(end)/\(body.count)"],
            body: body.subdata(in: start..<end + 1))
    }

    /// With `maxConcurrent` 4 and 4 connections each, four files too short to split run at once:
    /// each gives back the three slots it does not use as soon as its first answer says so — a
    /// range of the whole file, or a server without ranges.
    @Test(arguments: [true, false]) func unsplittableFilesGiveBackTheirSlotsAndRunAtOnce(ranges: Bool) async throws {
        let bodies = (0..<4).map { pattern(100_000, seed: $0 + 1) }
        let transport = GatedTransport(opensAt: 4) { request in
            let index = Int(request.url!.lastPathComponent.dropFirst("f".count))!
            return Self.answer(request, body: bodies[index], ranges: ranges)
        }
        let folder = try scratchFolder()
        let manager = try manager(transport, folder: folder, maxConcurrent: 4)
        defer { manager.close() }
        try manager.add(
            contentsOf: (0..<4).map {
                DownloadManager.Request(url: URL(string: "http://scripted.test/f\($0)")!, connections: 4)
            })

        await transport.untilOpen()
        #expect(transport.isOpen, "four transfers wait for their bodies at once")
        transport.open()  // Failed: the rest may go on.
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.count == 4)
        for (index, body) in bodies.enumerated() {
            #expect(try Data(contentsOf: folder.appendingPathComponent("f\(index)")) == body)
        }
    }

    /// A file split into 4 ranges keeps the 4 slots it took while they run: a pending item waits
    /// until a range has finished.
    @Test func aFourRangeSplitKeepsItsFourSlots() async throws {
        let big = largePattern(4 << 20, seed: 7)
        let small = pattern(50_000, seed: 3)
        let transport = GatedTransport(opensAt: 4) { request in
            Self.answer(request, body: request.url!.lastPathComponent == "big" ? big : small, ranges: true)
        }
        let folder = try scratchFolder()
        let manager = try manager(transport, folder: folder, maxConcurrent: 4)
        defer { manager.close() }
        try manager.add(
            contentsOf: ["big", "small"].map {
                DownloadManager.Request(url: URL(string: "http://scripted.test/\($0)")!, connections: 4)
            })

        await transport.untilOpen()
        #expect(transport.isOpen, "the four ranges wait for their bodies")
        transport.open()
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.count == 2)
        let paths = transport.requests.map { $0.url!.lastPathComponent }
        #expect(paths.prefix(4) == ["big", "big", "big", "big"], "the split's four connections ran first")
        #expect(paths.last == "small", "the small file started in a slot a finished range gave back")
        #expect(try Data(contentsOf: folder.appendingPathComponent("big")) == big)
        #expect(try Data(contentsOf: folder.appendingPathComponent("small")) == small)
    }

    /// A manager that ran split downloads is released once closed and let go of: a split's first
    /// connection held itself (its end read its own handler), and with it the split, the download and
    /// the manager. Found by the simulation of the real manager (its managers' memory grew).
    @Test(arguments: [true, false]) func aManagerThatRanSplitsIsReleased(ranges: Bool) async throws {
        let big = largePattern(2 << 20, seed: 9)
        let transport = GatedTransport(opensAt: 1) { request in Self.answer(request, body: big, ranges: ranges) }
        let folder = try scratchFolder()
        let log = UpdateLog()
        var configuration = testConfiguration(log, maxConcurrent: 2)
        let scheduler = TestScheduler()
        configuration.scheduler = scheduler
        configuration.httpTransport = transport
        var manager: DownloadManager? = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        weak let released = manager
        try manager!.add(contentsOf: [.init(url: URL(string: "http://scripted.test/big")!, connections: 2)])
        await transport.untilOpen()
        transport.open()
        let summary = await manager!.waitUntilFinished()
        #expect(summary.completed.count == 1)
        #expect(try Data(contentsOf: folder.appendingPathComponent("big")) == big)
        manager!.close()
        manager = nil
        // The timers that never came due (a delivery's, say) hold the manager until they run.
        scheduler.run()
        await eventually("the closed manager is released") { released == nil }
    }

    /// A split resumed with fewer slots than ranges left opens no more connections than it holds:
    /// the other ranges wait for one to finish, and the file ends byte-exact.
    @Test func aResumedSplitOpensNoMoreConnectionsThanItsSlots() async throws {
        let big = largePattern(4 << 20, seed: 11)
        // Opened by hand only: the bodies of the resumed ranges wait until both are asked, so a
        // range that ends at once cannot hide a second connection (or make room for a third).
        let transport = GatedTransport(opensAt: .max) { request in Self.answer(request, body: big, ranges: true) }
        let folder = try scratchFolder()
        let manager = try manager(transport, folder: folder, maxConcurrent: 4)
        defer { manager.close() }
        let id = try manager.add(contentsOf: [
            DownloadManager.Request(url: URL(string: "http://scripted.test/big")!, connections: 4)
        ])[0]
        await transport.untilRequests(4)
        #expect(transport.requests.count == 4, "the split's four connections wait for their bodies")

        try manager.suspend(id)
        manager.setMaxConcurrent(2)
        try manager.resume(id)
        await transport.untilRequests(6)
        transport.open()
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.count == 1)
        #expect(transport.requests.count == 8, "the four ranges asked again")
        #expect(transport.mostAtOnce(from: 4) == 2, "no more connections than the two slots")
        #expect(try Data(contentsOf: folder.appendingPathComponent("big")) == big)
    }
}
