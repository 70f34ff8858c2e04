import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// `Configuration.maxBytesPerSecond`, `Request.maxBytesPerSecond` and `setMaxBytesPerSecond`, end to end
/// through the manager's own AsyncHTTPClient.
@Suite(.timeLimit(.minutes(10))) struct DownloadManagerSpeedLimitTests {
    /// With time standing still, a limited download stops reading after its burst and first chunks;
    /// moving the scheduler's time lets it read on — the limit is the scheduler's, not a sleeping thread.
    @Test func aLimitedDownloadWaitsForTheSchedulersTime() async throws {
        let bytes = pattern(1 << 20)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let scheduler = WatchedScheduler()
        // The files in memory: each chunk read is a write to the `.part` the test can wait for (with
        // time standing still, nothing the manager delivers or schedules need follow its count).
        let disk = MemoryFileSystem()
        let folder = URL(fileURLWithPath: "/memory-\(UUID().uuidString)/downloads")
        let log = UpdateLog()
        var configuration = testConfiguration(log)
        configuration.scheduler = scheduler
        configuration.fileSystem = disk
        configuration.maxBytesPerSecond = 64 << 10
        // The progress delivery is a timer of the scheduler too: an hour away, it is never taken for
        // the limiter's wait (a debt of one chunk at 64 KiB/s: about a second at most).
        configuration.progressInterval = .seconds(3600)
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        try manager.add(server.url("limited.bin"))

        await scheduler.until("the download waits for the limit") { $0.contains { $0 < .seconds(60) } }
        let path = folder.path
        let before = disk.contents(of: "limited.bin.part", in: path)?.count ?? 0
        #expect(before < 1 << 20)
        let wait = try #require(scheduler.scheduledDelays.first { $0 < .seconds(60) })
        scheduler.advance(by: wait)
        await disk.until("the next chunks are read") {
            ($0.contents(of: "limited.bin.part", in: path)?.count ?? 0) > before
        }
        manager.setMaxBytesPerSecond(nil)
        #expect(manager.maxBytesPerSecond == nil)
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        #expect(disk.contents(of: "limited.bin", in: path) == bytes)
    }

    /// 2 MiB at 512 KiB/s takes about 4 s: the measured rate is never more than 10% over the limit.
    /// Only the upper bound is asserted: a busy machine (a full parallel run) makes a download slower,
    /// never faster, and a lower rate is its load, not the limiter's. The ±10% figure over 10 s is
    /// `Benchmarks/Networking/speed-limit.sh`'s, measured alone, in BENCHMARKS.md; the limiter's
    /// exact rate is `BandwidthLimiterTests`', on virtual time.
    @Test func aLimitedDownloadsRateIsNeverAboveTheLimit() async throws {
        let limit: Int64 = 512 << 10
        let bytes = pattern(2 << 20)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        var configuration = testConfiguration(log)
        configuration.maxBytesPerSecond = limit
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(server.url("measured.bin"))
        // Measured from the first bytes on: the manager's and the server's start are not the limit's.
        await manager.until("the first bytes arrived", item: id) { $0.progress.received > 0 }
        let started = DispatchTime.now().uptimeNanoseconds
        let first = manager.item(id)?.progress.received ?? 0
        let summary = await manager.waitUntilFinished()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(summary.allSucceeded)
        let rate = Double(Int64(bytes.count) - first) / seconds
        #expect(rate <= Double(limit) * 1.1, "\(Int(rate)) B/s against \(limit) B/s")
    }

    /// A request's own limit holds it below the overall one; raising it while it runs takes effect.
    @Test func anItemsOwnLimitChangedWhileItRunsTakesEffect() async throws {
        let bytes = pattern(4 << 20)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        var configuration = testConfiguration(log)
        configuration.maxBytesPerSecond = 64 << 20
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        var request = DownloadManager.Request(url: server.url("item.bin"))
        request.maxBytesPerSecond = 32 << 10  // 4 MiB would take two minutes
        let id = try manager.add(contentsOf: [request])[0]

        await manager.until("the download runs", item: id) { $0.progress.received > 0 }
        let started = DispatchTime.now().uptimeNanoseconds
        try manager.setMaxBytesPerSecond(nil, for: id)
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        #expect(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 < 10)
        #expect(try Data(contentsOf: folder.appendingPathComponent("item.bin")) == bytes)
        #expect(throws: DownloadManagerError.unknownItem(.init(rawValue: 99))) {
            try manager.setMaxBytesPerSecond(1, for: .init(rawValue: 99))
        }
    }
}
