import Dispatch
import Foundation
import JobKit
import JobKitServer
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `DownloadManager.updates()` end to end, on the loopback JobKit server: consumers at their own
/// pace, from a snapshot, with every event, ended by `close()`, released when they stop.
@Suite struct DownloadManagerUpdatesTests {
    typealias Update = DownloadManager.Update

    /// Reads an iterator to its end.
    static func drain(_ iterator: DownloadManager.Updates.AsyncIterator) async -> [Update] {
        var iterator = iterator
        var updates: [Update] = []
        while let update = await iterator.next() { updates.append(update) }
        return updates
    }

    /// The states item `id` went through, in the events of `updates`.
    static func states(of id: DownloadManager.ItemID, in updates: [Update]) -> [DownloadManager.State] {
        updates.flatMap(\.events).compactMap { event in
            if case .changed(let item) = event, item.id == id { return item.state }
            return nil
        }
    }

    static func requests(_ fixture: ServerFixture, count: Int, size: Int = 40_000) throws -> [DownloadManager.Request] {
        try (0..<count).map { index in
            _ = try fixture.makeFile("u\(index).bin", count: size + index)
            return DownloadManager.Request(url: fixture.url("files/u\(index).bin"))
        }
    }

    @Test func aStalledConsumerGetsAHandfulOfUpdatesAndBothEndWithEveryFinalState() async throws {
        try await withFixture { fixture in
            let requests = try Self.requests(fixture, count: 30)
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue,
                onUpdate: log.handler)
            // Both start before anything is added: each sees every item's every state.
            let stalled = manager.updates().makeAsyncIterator()
            let live = Task { [iterator = manager.updates().makeAsyncIterator()] in await Self.drain(iterator) }

            let ids = try manager.add(contentsOf: requests)
            let summary = await manager.waitUntilFinished()
            #expect(summary.allSucceeded)
            manager.close()

            let liveUpdates = await live.value
            let stalledUpdates = await Self.drain(stalled)
            #expect(stalledUpdates.count <= 3, "the snapshot, then everything merged: \(stalledUpdates.count)")
            for (name, updates) in [("live", liveUpdates), ("stalled", stalledUpdates)] {
                #expect(updates.first?.items.isEmpty == true && updates.first?.events.isEmpty == true, "\(name)")
                let last = try #require(updates.last)
                #expect(last.items.map(\.id) == ids, "\(name)")
                #expect(last.items.allSatisfy { $0.state == .completed }, "\(name)")
                #expect(last.totals.completed == 30, "\(name)")
                for id in ids {
                    #expect(Self.states(of: id, in: updates) == [.pending, .running, .completed], "\(name)")
                }
                let finished = updates.flatMap(\.events).filter { if case .allFinished = $0 { true } else { false } }
                #expect(finished.count == 1, "\(name)")
            }
            // The live consumer saw what `onUpdate` saw, event for event.
            #expect(liveUpdates.flatMap(\.events) == log.events)
        }
    }

    @Test func theFirstUpdateIsASnapshotOfEveryItem() async throws {
        try await withFixture { fixture in
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue,
                onUpdate: log.handler)
            let ids = try manager.add(contentsOf: try Self.requests(fixture, count: 3))
            _ = await manager.waitUntilFinished()
            try manager.suspend(ids[0])  // completed: stays completed
            var iterator = manager.updates().makeAsyncIterator()
            let first = try #require(await iterator.next())
            #expect(first.events.isEmpty)
            #expect(first.items.map(\.id) == ids)
            #expect(first.items.allSatisfy { $0.state == .completed && $0.progress.received >= 40_000 })
            #expect(first.totals.completed == 3)
            manager.close()
            // Nothing happened after the snapshot: the sequence ends with no event.
            let rest = await Self.drain(iterator)
            #expect(rest.flatMap(\.events).isEmpty)
        }
    }

    @Test func theSequenceEndsWhenTheManagerIsClosed() async throws {
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue)
        let reader = Task { [iterator = manager.updates().makeAsyncIterator()] in await Self.drain(iterator) }
        // The iterator is made with the task, before it runs: its consumer is registered then.
        #expect(manager.updateConsumerCount == 1, "the reader has its consumer")
        manager.close()
        let updates = await reader.value
        #expect(updates.count >= 1 && updates.count <= 2)
        #expect(manager.updateConsumerCount == 0)
    }

    @Test func aConsumerStartedAfterCloseEndsAtOnce() async throws {
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue)
        manager.close()
        var iterator = manager.updates().makeAsyncIterator()
        #expect(await iterator.next() == nil)
        #expect(manager.updateConsumerCount == 0)
    }

    @Test func droppingAnIteratorReleasesItsConsumer() throws {
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue)
        weak var subscription: UpdateSubscription<DownloadManager.Machine>?
        do {
            let iterator = manager.updates().makeAsyncIterator()
            subscription = iterator.subscription
            #expect(manager.updateConsumerCount == 1)
        }
        #expect(subscription == nil)
        #expect(manager.updateConsumerCount == 0)
        manager.close()
    }

    @Test func anIteratorDoesNotKeepTheManagerAndEndsWhenItIsReleased() async throws {
        let log = UpdateLog()
        weak var released: DownloadManager?
        var iterator: DownloadManager.Updates.AsyncIterator
        do {
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue)
            released = manager
            iterator = manager.updates().makeAsyncIterator()
        }
        #expect(released == nil)
        #expect(await iterator.next() != nil, "the snapshot")
        #expect(await iterator.next() == nil)
    }

    @Test func cancellingTheIteratingTaskAtAnyPointReleasesItsConsumer() async throws {
        try await withFixture { fixture in
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue,
                onUpdate: log.handler)
            try manager.add(contentsOf: try Self.requests(fixture, count: 20, size: 200_000))
            var readers: [Task<Int, Never>] = []
            for round in 0..<50 {
                let taken = Watched(0)
                let reader = Task {
                    var count = 0
                    for await _ in manager.updates() {
                        count += 1
                        taken.withLock { $0 = count }
                    }
                    return count
                }
                // Cancelled before it starts, while it waits, or between two updates (after its
                // first, the snapshot every iteration starts with).
                for _ in 0..<(round % 5) { await Task.yield() }
                if round % 7 == 0 { await taken.until("the reader took its first update") { $0 >= 1 } }
                reader.cancel()
                readers.append(reader)
            }
            for reader in readers { _ = await reader.value }
            #expect(manager.updateConsumerCount == 0)
            _ = await manager.waitUntilFinished()
            manager.close()
        }
    }

    @Test func aThousandConsumersEachEndWithEveryFinalState() async throws {
        try await withFixture { fixture in
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue,
                onUpdate: log.handler)
            let iterators = (0..<1_000).map { _ in manager.updates().makeAsyncIterator() }
            #expect(manager.updateConsumerCount == 1_000)
            let ids = try manager.add(contentsOf: try Self.requests(fixture, count: 5))
            let readers = iterators.map { iterator in Task { await Self.drain(iterator) } }
            _ = await manager.waitUntilFinished()
            manager.close()
            for reader in readers {
                let updates = await reader.value
                #expect(updates.last?.items.map(\.state) == Array(repeating: .completed, count: 5))
                for id in ids where Self.states(of: id, in: updates).last != .completed {
                    Issue.record("item \(id) has no final state")
                }
            }
            #expect(manager.updateConsumerCount == 0)
        }
    }
}
