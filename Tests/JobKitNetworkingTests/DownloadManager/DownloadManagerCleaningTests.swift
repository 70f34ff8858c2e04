import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `DownloadManager`'s state machine while the files of a name are being unlinked: nothing of
/// that name starts until the unlinks are done.
@Suite struct DownloadManagerCleaningTests {
    typealias Machine = DownloadManagerStateMachine<Int>

    func machine(limit: Int = 2) -> Machine {
        Machine(
            directory: URL(fileURLWithPath: "/downloads"), limit: limit, perHost: nil, interval: .milliseconds(100),
            window: .seconds(5))
    }

    func request(_ name: String, host: String = "a.example") -> DownloadManager.Request {
        .init(url: URL(string: "https://\(host)/\(name)")!)
    }

    @Test func anItemResumedBeforeItsCancelledPartIsUnlinkedWaitsForTheUnlink() throws {
        var machine = machine()
        let (ids, actions) = machine.commit(try machine.prepare([request("a")]), now: 0)
        let cancelled = try machine.cancel(ids[0], now: 1)
        #expect(cancelled.cleaning == ["a"])

        let resumed = try machine.resume(ids[0], now: 2)

        #expect(resumed.starts.isEmpty, "its .part is not unlinked yet")
        #expect(machine.item(ids[0], now: 2).state == .pending)
        let cleaned = machine.cleaned(cancelled.cleaning, now: 3)
        #expect(cleaned.starts.isEmpty, "nor has its cancelled run ended")
        let ended = machine.runEnded(ids[0], generation: actions.starts[0].generation, .cancelled, now: 4)
        #expect(ended.unlinks.isEmpty, "pending again, the item resumes from what the run left")
        #expect(machine.cleaned(ended.cleaning, now: 4).starts.map(\.id) == ids)
    }

    @Test func aNameAddedAgainBeforeTheRemovedItemsFilesAreUnlinkedWaitsForTheUnlink() throws {
        var machine = machine(limit: 3)
        let (ids, actions) = machine.commit(try machine.prepare([request("a"), request("b")]), now: 0)
        let finishing = machine.finishing(ids[0], generation: actions.starts[0].generation, size: 10)
        #expect(finishing)
        _ = machine.runEnded(ids[0], generation: actions.starts[0].generation, .completed, now: 1)
        let removed = try machine.remove(ids[0], deletingFile: true, now: 2)
        #expect(removed.unlinks == ["a"])

        let (again, added) = machine.commit(
            try machine.prepare([request("a"), request("c", host: "c.example")]), now: 3)

        #expect(added.starts.map(\.name) == ["c"], "another host goes on; a waits for its name")
        let cleaned = machine.cleaned(removed.cleaning, now: 4)
        #expect(cleaned.starts.map(\.id) == [again[0]])
    }

    @Test func theStaleRunsLateEndLeavesTheResumedItemsPartAndStartsIt() throws {
        var machine = machine()
        let (ids, actions) = machine.commit(try machine.prepare([request("a")]), now: 0)
        let cancelled = try machine.cancel(ids[0], now: 1)
        _ = machine.cleaned(cancelled.cleaning, now: 1)
        _ = try machine.suspend(ids[0], now: 1)  // cancelled: does nothing
        let resumed = try machine.resume(ids[0], now: 2)
        #expect(resumed.starts.isEmpty, "the cancelled run has not ended")
        _ = try machine.suspend(ids[0], now: 3)

        // The first run ends late: the suspended item holds the name again, so the .part stays.
        let ended = machine.runEnded(ids[0], generation: actions.starts[0].generation, .cancelled, now: 4)
        #expect(ended.unlinks.isEmpty)
        #expect(ended.cleaning == ["a"], "the name is released")
        _ = machine.cleaned(ended.cleaning, now: 4)
        let resumedAgain = try machine.resume(ids[0], now: 5)
        #expect(resumedAgain.starts.count == 1)
        #expect(resumedAgain.starts.first?.generation != actions.starts[0].generation)
    }
}
