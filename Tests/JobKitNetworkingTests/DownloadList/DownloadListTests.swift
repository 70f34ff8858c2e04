import Foundation
import JobKit
import JobKitTestSupport
import Observation
import Testing

@testable import JobKitNetworking

/// `DownloadList` on a manager of the loopback server: observation fires on the main actor, the
/// lists follow the items, the controls reach the manager, and nothing is kept after close or
/// release.
@Suite struct DownloadListTests {
    /// Set once by an observation's `onChange`.
    final class Flag: Sendable {
        private let state = LockedBox<Int>.make(0)
        func raise() { state.withLock { $0 += 1 } }
        var count: Int { state.withLock { $0 } }
    }

    /// `eventually`, with the condition read on the main actor (polling every 5 ms until the safety deadline).
    @MainActor static func eventuallyOnMain(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: @MainActor () -> Bool
    ) async {
        let deadline = ContinuousClock.now + safetyDeadline
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
                return
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// `withFixture` for a test on the main actor.
    static func withServer(_ body: @MainActor (ServerFixture) async throws -> Void) async throws {
        let fixture = try await ServerFixture.start()
        do {
            try await body(fixture)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    /// Counts the changes of `list.totals` into `flag`, re-arming after each.
    @MainActor static func track(_ list: DownloadList, _ flag: Flag) {
        withObservationTracking {
            _ = list.totals
        } onChange: {
            flag.raise()
            Task { @MainActor in track(list, flag) }
        }
    }

    @MainActor func manager(_ log: UpdateLog) throws -> DownloadManager {
        try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue)
    }

    @MainActor @Test func observationFiresForAStateChange() async throws {
        try await Self.withServer { fixture in
            _ = try fixture.makeFile("a.bin", count: 30_000)
            let manager = try manager(UpdateLog())
            let list = DownloadList(manager)
            let flag = Flag()
            withObservationTracking {
                _ = list.items
            } onChange: {
                flag.raise()
            }
            let id = try manager.add(fixture.url("files/a.bin"))
            await eventually("the change tracking fires") { flag.count == 1 }
            await Self.eventuallyOnMain("the item is completed") { list.completed.map(\.id) == [id] }
            #expect(list.inProgress.isEmpty)
            #expect(list.totals.completed == 1)
            #expect(list.items.first?.percent == 100)
            manager.close()
        }
    }

    @MainActor @Test func itIsFilledAtOnceWithEveryItem() async throws {
        try await Self.withServer { fixture in
            _ = try fixture.makeFile("a.bin", count: 30_000)
            let manager = try manager(UpdateLog())
            let id = try manager.add(fixture.url("files/a.bin"))
            _ = await manager.waitUntilFinished()
            let list = DownloadList(manager)
            #expect(list.items.map(\.id) == [id])
            #expect(list.completed.map(\.id) == [id])
            manager.close()
        }
    }

    @MainActor @Test func theControlsReachTheManager() async throws {
        let gate = Gate()
        let server = try ScriptedServer { _, _ in
            .stall(body: pattern(100_000), sent: 10_000, until: gate, headers: ["ETag": "\"c\""])
        }
        defer {
            gate.open()
            server.stop()
        }
        let manager = try manager(UpdateLog())
        let list = DownloadList(manager)
        let id = try manager.add(server.url("slow.bin"))
        await Self.eventuallyOnMain("it runs") { list.inProgress.first?.state == .running }
        try list.suspend(id)
        await Self.eventuallyOnMain("it is suspended") { list.inProgress.first?.state == .suspended }
        try list.cancel(id)
        await Self.eventuallyOnMain("it is cancelled") { list.inProgress.first?.state == .cancelled }
        try list.remove(id)
        await Self.eventuallyOnMain("it is gone") { list.items.isEmpty }
        manager.close()
        await Self.eventuallyOnMain("the list sees the close") { list.isClosed }
        #expect(throws: DownloadManagerError.closed) { try list.resume(id) }
    }

    @MainActor @Test func changesComeAtMostTenTimesASecond() async throws {
        try await Self.withServer { fixture in
            var requests: [DownloadManager.Request] = []
            for index in 0..<20 {
                _ = try fixture.makeFile("r\(index).bin", count: 300_000)
                requests.append(.init(url: fixture.url("files/r\(index).bin")))
            }
            let manager = try manager(UpdateLog())
            let list = DownloadList(manager)
            let flag = Flag()
            let start = ContinuousClock.now
            Self.track(list, flag)
            try manager.add(contentsOf: requests)
            _ = await manager.waitUntilFinished()
            await Self.eventuallyOnMain("the list has every completion") { list.completed.count == 20 }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            #expect(Double(flag.count) <= seconds * 10 + 2, "\(flag.count) changes in \(seconds) s")
            manager.close()
        }
    }

    @MainActor @Test func closingTheManagerReleasesItAndReleasingTheListStopsItsTask() async throws {
        weak var releasedManager: DownloadManager?
        weak var releasedList: DownloadList?
        var manager: DownloadManager? = try manager(UpdateLog())
        releasedManager = manager
        var list: DownloadList? = DownloadList(manager!)
        releasedList = list
        #expect(manager?.updateConsumerCount == 1)
        // Released while the manager is open: its task ends and its consumer goes.
        list = nil
        #expect(releasedList == nil)
        await eventually("the list's consumer is gone") { [manager] in manager?.updateConsumerCount == 0 }
        // A list on a closed manager lets it go.
        let second = DownloadList(manager!)
        manager?.close()
        await Self.eventuallyOnMain("the list sees the close") { second.isClosed }
        manager = nil
        #expect(releasedManager == nil)
    }

    @MainActor @Test func aCloseIsSeenAtOnceWhateverTheIntervalWithTheLastUpdatesShown() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(1_000)) }
        defer { server.stop() }
        weak var released: DownloadManager?
        var manager: DownloadManager? = try manager(UpdateLog())
        released = manager
        // An interval longer than any wait of the test: a list that showed the close only after it
        // would never show it here, and the wait below would fail by its deadline. (The test does
        // not time the close: under a full parallel run the main actor alone can take seconds.)
        let list = DownloadList(manager!, refreshInterval: .seconds(3600))
        let id = try manager!.add(server.url("a.bin"))
        await eventually("it completed") { [manager] in manager?.item(id)?.state == .completed }
        #expect(list.completed.isEmpty, "its changes wait out the interval")

        manager?.close()
        manager = nil
        await Self.eventuallyOnMain("the list sees the close") { list.isClosed }
        await Self.eventuallyOnMain("the list lets the manager go") { released == nil }
        #expect(list.completed.map(\.id) == [id], "the updates taken before the close are shown")
        #expect(throws: DownloadManagerError.closed) { try list.resume(id) }
    }
}
