import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// `Configuration.scheduler`: the manager's clock and timers are the scheduler's.
@Suite struct DownloadManagerSchedulerTests {
    /// A 503 with a `Retry-After` of two minutes: the retry waits for the scheduler's time, not the wall
    /// clock's, and goes on the moment the test moves time past it.
    @Test func aRetryWaitsForTheSchedulersTimeNotTheWallClocks() async throws {
        let bytes = pattern(10_000)
        let server = try ScriptedServer { _, index in
            index == 0 ? .respond(503, headers: ["Retry-After": "120"]) : .respond(200, body: bytes)
        }
        defer { server.stop() }
        let scheduler = WatchedScheduler()
        let folder = try scratchFolder()
        let log = UpdateLog()
        var configuration = testConfiguration(
            log, retry: DownloadManager.RetryPolicy(attempts: 2, backoff: .constant(.milliseconds(10))))
        configuration.scheduler = scheduler
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        try manager.add(server.url("later.bin"))

        await scheduler.until("the retry waits for the scheduler") { $0.contains(.seconds(120)) }
        #expect(server.requests.count == 1)
        #expect(manager.items.first?.state == .running)

        scheduler.advance(by: .seconds(120))
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        #expect(server.requests.count == 2)
        #expect(try Data(contentsOf: folder.appendingPathComponent("later.bin")) == bytes)
    }

    /// Progress alone is coalesced on the scheduler's clock: with time standing still, a running
    /// download's progress waits for the interval; moving time delivers it. On the scripted transport,
    /// which holds the body before its first byte (until the item's `running` is delivered: progress
    /// arriving while a state change's delivery is due rides on it) and at its half, as a stalled
    /// server would.
    @Test func coalescedProgressIsDeliveredWhenTheSchedulersTimeComes() async throws {
        let bytes = pattern(200_000)
        let transport = ScriptedTransport { _, _ in .init(status: 200, body: bytes, holds: [0, 100_000]) }
        let scheduler = WatchedScheduler()
        let log = UpdateLog()
        var configuration = testConfiguration(log)
        configuration.scheduler = scheduler
        configuration.httpTransport = transport
        let folder = try scratchFolder()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(URL(string: "http://scripted.test/slow.bin")!)

        await transport.untilHolding(0)
        await log.wait(for: id, toBe: .running)
        transport.release()
        await transport.untilHolding(0)
        #expect(manager.items.first?.progress.received == 100_000, "the first half has arrived")
        await scheduler.until("the delivery waits for the scheduler") { !$0.isEmpty }
        scheduler.advance(by: .seconds(1))
        await log.wait(until: { $0.last?.items.first?.progress.received == 100_000 })
        transport.release()
        scheduler.advance(by: .seconds(1))
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
    }
}
