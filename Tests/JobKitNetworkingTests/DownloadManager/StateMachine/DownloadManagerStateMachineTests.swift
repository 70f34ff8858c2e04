import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `DownloadManager`'s state machine alone: no queue, no lock, no file, no clock.
@Suite struct DownloadManagerStateMachineTests {
    typealias Machine = DownloadManagerStateMachine<Int>
    typealias ItemID = DownloadManager.ItemID

    static let folder = URL(fileURLWithPath: "/downloads")

    func machine(limit: Int = 2, perHost: Int? = nil) -> Machine {
        Machine(
            directory: Self.folder, limit: limit, perHost: perHost, interval: .milliseconds(100), window: .seconds(5))
    }

    func request(_ path: String, host: String = "a.example", name: String? = nil) -> DownloadManager.Request {
        .init(url: URL(string: "https://\(host)/\(path)")!, name: name)
    }

    /// Adds requests as the manager does: prepare, then commit.
    func add(_ requests: [DownloadManager.Request], to machine: inout Machine, now: UInt64 = 0) throws
        -> (ids: [ItemID], actions: Machine.Actions)
    {
        let prepared = try machine.prepare(requests)
        return machine.commit(prepared, now: now)
    }

    func states(_ machine: Machine) -> [String] {
        machine.ids.map { machine.item($0, now: 0).state.name }
    }

    @Test func itemsStartInOrderUpToTheWidth() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add((0..<4).map { request("f\($0)") }, to: &machine)

        #expect(actions.starts.map(\.id) == Array(ids.prefix(2)))
        #expect(actions.starts.map(\.name) == ["f0", "f1"])
        #expect(states(machine) == ["running", "running", "pending", "pending"])
        #expect(actions.wake == .now)
        // A run that ends starts the next pending one.
        let next = machine.runEnded(ids[0], generation: actions.starts[0].generation, .completed, now: 10)
        #expect(next.starts.map(\.id) == [ids[2]])
        #expect(next.writesJournal && next.syncsJournal, "a completion is journaled and synced")
        #expect(states(machine) == ["completed", "running", "running", "pending"])
    }

    @Test func thePerHostLimitSkipsAFullHostAndKeepsTheOrder() throws {
        var machine = machine(limit: 3, perHost: 1)
        let requests = [
            request("a0"), request("a1"), request("b0", host: "b.example"), request("a2"),
            request("c0", host: "c.example"),
        ]
        let (ids, actions) = try add(requests, to: &machine)

        #expect(actions.starts.map(\.name) == ["a0", "b0", "c0"])
        // a0 ends: a1 (the oldest of host a) starts, not a2.
        let next = machine.runEnded(ids[0], generation: actions.starts[0].generation, .completed, now: 1)
        #expect(next.starts.map(\.name) == ["a1"])
        // b0 ends: host a is full, nothing else is pending for b or c.
        let none = machine.runEnded(ids[2], generation: actions.starts[1].generation, .completed, now: 2)
        #expect(none.starts.isEmpty)
        #expect(machine.scheduler.runningCount == 2)
    }

    @Test func suspendingARunningItemCancelsItsRunFreesItsSlotAndKeepsItsPart() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        let generation = actions.starts[0].generation
        let kept = machine.attach(41, to: ids[0], generation: generation)
        #expect(kept == nil, "the current run keeps its handle")

        let suspended = try machine.suspend(ids[0], now: 5)

        #expect(suspended.cancels == [41])
        #expect(suspended.unlinks.isEmpty, "the .part stays for resume")
        #expect(suspended.starts.map(\.id) == [ids[1]])
        #expect(states(machine) == ["suspended", "running"])
        // The cancelled run's late callbacks are ignored.
        let lateProgress = machine.received(ids[0], generation: generation, count: 100, now: 6)
        #expect(lateProgress == nil)
        let lateEnd = machine.runEnded(ids[0], generation: generation, .cancelled, now: 7)
        #expect(lateEnd.starts.isEmpty)
        #expect(states(machine) == ["suspended", "running"])
        // Resumed, it waits for the slot.
        let resumed = try machine.resume(ids[0], now: 8)
        #expect(resumed.starts.isEmpty)
        #expect(states(machine) == ["pending", "running"])
    }

    @Test func aHandleAttachedAfterItsItemLeftRunningIsReturnedToCancel() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a")], to: &machine)
        let suspended = try machine.suspend(ids[0], now: 1)
        #expect(suspended.cancels.isEmpty, "no handle yet")

        let stale = machine.attach(7, to: ids[0], generation: actions.starts[0].generation)
        #expect(stale == 7)
    }

    @Test func cancelRemovesThePartAndRemoveForgetsTheItem() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b"), request("c")], to: &machine)
        _ = machine.attach(1, to: ids[0], generation: actions.starts[0].generation)

        let cancelled = try machine.cancel(ids[0], now: 1)
        #expect(cancelled.cancels == [1])
        #expect(cancelled.unlinks == ["a.part", "a.part.meta"])
        #expect(machine.item(ids[0], now: 1).state == .cancelled)

        let removed = try machine.remove(ids[2], deletingFile: true, now: 2)
        #expect(removed.unlinks == ["c.part", "c.part.meta"])
        #expect(machine.itemIfAny(ids[2], now: 2) == nil)
        #expect(throws: DownloadManagerError.unknownItem(ids[2])) { try machine.suspend(ids[2], now: 3) }
        // The name is free again.
        let again = try add([request("c")], to: &machine)
        #expect(again.ids[0] != ids[2], "ids are never reused")
    }

    @Test func aPartMadeByARunThatWasStartingWhenCancelledIsRemovedWhenItEnds() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a")], to: &machine)
        let generation = actions.starts[0].generation
        // Cancelled before its handle was attached: its body may yet make the .part.
        let cancelled = try machine.cancel(ids[0], now: 1)
        #expect(cancelled.unlinks == ["a.part", "a.part.meta"])
        let ended = machine.runEnded(ids[0], generation: generation, .cancelled, now: 2)
        #expect(ended.unlinks == ["a.part", "a.part.meta"], "again, once it ended")
        #expect(machine.runEnded(ids[0], generation: generation, .cancelled, now: 3).unlinks.isEmpty, "only once")
        // The manager reports the unlinks done.
        _ = machine.cleaned(cancelled.cleaning + ended.cleaning, now: 3)

        // Resumed and cancelled again: queued again, it waits until the second run reported its
        // end, and then resumes from what that run left.
        let second = try #require(try machine.resume(ids[0], now: 4).starts.first?.generation)
        let restart = try machine.cancel(ids[0], now: 5)
        #expect(restart.unlinks.count == 2)
        _ = machine.cleaned(restart.cleaning, now: 5)
        let waiting = try machine.resume(ids[0], now: 6)
        #expect(waiting.starts.isEmpty)
        let secondEnded = machine.runEnded(ids[0], generation: second, .cancelled, now: 7)
        #expect(secondEnded.unlinks.isEmpty, "pending again: its .part is kept to resume from")
        #expect(machine.cleaned(secondEnded.cleaning, now: 7).starts.count == 1)
    }

    /// Cancel, resume, suspend, and only then the cancelled run reports its end: the suspended item's
    /// `.part` (made by its second run) is kept for its resume. So is a failed, a pending or a
    /// completed one's; a name still cancelled, or nobody's, loses it.
    @Test func aLateEndOfACancelledRunLeavesThePartOfAnItemThatHoldsTheNameAgain() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a")], to: &machine)
        let first = actions.starts[0].generation
        let cancelled = try machine.cancel(ids[0], now: 1)
        _ = machine.cleaned(cancelled.cleaning, now: 1)
        let resumed = try machine.resume(ids[0], now: 2)
        #expect(resumed.starts.isEmpty, "not before the cancelled run ended")
        _ = try machine.suspend(ids[0], now: 3)
        #expect(states(machine) == ["suspended"])
        let lateEnd = machine.runEnded(ids[0], generation: first, .cancelled, now: 4)
        #expect(lateEnd.unlinks.isEmpty, "the suspended item resumes from its .part")

        // Still cancelled when the run ends: its .part goes.
        var other = self.machine(limit: 1)
        let (otherIDs, otherActions) = try add([request("b")], to: &other)
        let cancelledAgain = try other.cancel(otherIDs[0], now: 1)
        _ = other.cleaned(cancelledAgain.cleaning, now: 1)
        let ended = other.runEnded(otherIDs[0], generation: otherActions.starts[0].generation, .cancelled, now: 2)
        #expect(ended.unlinks == ["b.part", "b.part.meta"])
    }

    @Test func anOperationOnEveryItemStartsNothingItThenStops() throws {
        var machine = machine(limit: 1)
        let (ids, _) = try add([request("a"), request("b"), request("c")], to: &machine)
        _ = machine.beginDelivery(.now, now: 0)
        _ = machine.endDelivery(now: 0)
        machine.holdStarts()
        var actions = Machine.Actions()
        for id in ids { actions.merge(try machine.suspend(id, now: 1)) }
        actions.merge(machine.releaseStarts(now: 1))

        #expect(actions.starts.isEmpty)
        let delivery = machine.beginDelivery(.now, now: 2)
        let changes = delivery?.events.compactMap { event -> String? in
            if case .changed(let item) = event { return "\(item.name) \(item.state)" }
            return nil
        }
        #expect(changes == ["a suspended", "b suspended", "c suspended"])
    }

    @Test func removingACompletedItemDeletesItsFileOnlyWhenAskedAndOwned() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        for (id, start) in zip(ids, actions.starts) {
            let finishing = machine.finishing(id, generation: start.generation, size: 10)
            #expect(finishing)
            _ = machine.runEnded(id, generation: start.generation, .completed, now: 1)
        }
        let kept = try machine.remove(ids[0], deletingFile: false, now: 2)
        #expect(kept.unlinks.isEmpty)
        let deleted = try machine.remove(ids[1], deletingFile: true, now: 2)
        #expect(deleted.unlinks == ["b"])
    }

    @Test func aChecksumMismatchRemovesThePart() throws {
        var machine = machine()
        let (ids, actions) = try add([request("a")], to: &machine)
        let mismatch = DownloadManager.ItemError(kind: .checksumMismatch, message: "checksum mismatch")
        let ended = machine.runEnded(ids[0], generation: actions.starts[0].generation, .failed(mismatch), now: 1)
        #expect(ended.unlinks == ["a.part", "a.part.meta"])
        #expect(machine.item(ids[0], now: 1).state == .failed(mismatch))
        // Another failure keeps the .part for a later resume.
        var other = self.machine()
        let (otherIDs, otherActions) = try add([request("a")], to: &other)
        let http = DownloadManager.ItemError(kind: .httpStatus, message: "HTTP 500", status: 500)
        let otherEnd = other.runEnded(otherIDs[0], generation: otherActions.starts[0].generation, .failed(http), now: 1)
        #expect(otherEnd.unlinks.isEmpty)
    }

    @Test func requestsAreValidatedAllOrNothing() throws {
        var machine = machine()
        #expect(throws: DownloadManagerError.unsupportedURL("ftp://a/b")) {
            try machine.prepare([.init(url: URL(string: "ftp://a/b")!)])
        }
        #expect(
            throws: DownloadManagerError.invalidName(
                "..", reason: "it names a directory: a file name cannot be '.' or '..'")
        ) {
            try machine.prepare([request("x", name: "..")])
        }
        #expect(throws: DownloadManagerError.self) { try machine.prepare([request("ok"), request("x", name: "")]) }
        #expect(machine.ids.isEmpty)
        #expect(machine.items.nextID == 1, "a refused batch takes no id")

        let (ids, _) = try add([request("a"), request("a")], to: &machine)
        #expect(ids[0] == ids[1], "the same request twice in a batch is one item")
        #expect(machine.ids.count == 1)
        #expect(throws: DownloadManagerError.nameTaken("a", by: ids[0])) {
            try machine.prepare([request("other", name: "a")])
        }
        #expect(throws: DownloadManagerError.nameTaken("b", by: ItemID(rawValue: 2))) {
            try machine.prepare([request("b"), request("x", name: "b")])
        }
    }

    @Test func addingAFailedItemAgainQueuesItAgain() throws {
        var machine = machine()
        let (ids, actions) = try add([request("a")], to: &machine)
        let failure = DownloadManager.ItemError(kind: .network, message: "lost")
        _ = machine.runEnded(ids[0], generation: actions.starts[0].generation, .failed(failure), now: 1)

        let again = try add([request("a")], to: &machine)

        #expect(again.ids == ids)
        #expect(again.actions.starts.map(\.id) == ids)
        #expect(Array(Machine.records(of: try machine.prepare([request("a")]))).isEmpty, "no second add record")
    }

    @Test func theQueueDrainsOnceWithEveryOutcomeAfterTheLastState() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        _ = machine.beginDelivery(.now, now: 0)
        _ = machine.endDelivery(now: 0)
        let first = machine.runEnded(ids[0], generation: actions.starts[0].generation, .completed, now: 1)
        let failure = DownloadManager.ItemError(kind: .network, message: "lost")
        let last = machine.runEnded(ids[1], generation: actions.starts[1].generation, .failed(failure), now: 2)

        #expect(first.wake == .now)
        #expect(last.wake == nil, "the first wake has not run yet: it delivers both")
        let delivery = machine.beginDelivery(.now, now: 3)
        let update = try #require(delivery)
        guard update.events.count == 3, case .changed(let a) = update.events[0],
            case .changed(let b) = update.events[1],
            case .allFinished(let summary) = update.events[2]
        else {
            Issue.record("unexpected events \(update.events)")
            return
        }
        #expect(a.state == .completed)
        #expect(b.state == .failed(failure))
        #expect(summary.completed.map(\.id) == [ids[0]])
        #expect(summary.failed.map(\.id) == [ids[1]])
        #expect(!summary.allSucceeded)
        // Nothing more drains until an item is active again.
        let nextWake = machine.endDelivery(now: 4)
        #expect(nextWake == nil)
        _ = try machine.suspend(ids[0], now: 5)
        #expect(machine.undeliveredEventCount == 0, "a completed item cannot be suspended")
    }

    @Test func suspendingTheLastActiveItemDrainsTheQueueOnceItsRunHasEnded() throws {
        var machine = machine()
        let (ids, actions) = try add([request("a")], to: &machine)
        _ = try machine.suspend(ids[0], now: 1)
        #expect(machine.undeliveredEventCount == 3, "no notice while the stopped run may still hold its .part")
        let ended = machine.runEnded(ids[0], generation: actions.starts[0].generation, .cancelled, now: 1)
        _ = machine.cleaned(ended.cleaning, now: 1)
        let delivery = machine.beginDelivery(.now, now: 2)
        let update = try #require(delivery)
        #expect(update.events.count == 4, "pending, running, suspended, allFinished")
        if case .allFinished(let summary) = update.events.last {
            #expect(summary.suspended.map(\.id) == ids)
        } else {
            Issue.record("no notice")
        }
    }

    @Test func theQueueDrainsOnlyOnceTheUnlinksItDecidedAreDone() throws {
        // A waiter resumed by the drain may close the manager or exit the process: the `.part` of a
        // failed checksum, unlinked after the lock by another thread, must be gone by then.
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        let mismatch = DownloadManager.ItemError(kind: .checksumMismatch, message: "mismatch")
        let failed = machine.runEnded(ids[0], generation: actions.starts[0].generation, .failed(mismatch), now: 1)
        #expect(failed.unlinks == ["a.part", "a.part.meta"])
        _ = machine.finishing(ids[1], generation: actions.starts[1].generation, size: 0)
        _ = machine.runEnded(ids[1], generation: actions.starts[1].generation, .completed, now: 2)
        let before = machine.undeliveredEventCount
        _ = machine.cleaned(failed.cleaning, now: 3)
        #expect(machine.undeliveredEventCount == before + 1, "the notice comes once the unlinks are done")
        let delivery = machine.beginDelivery(.now, now: 4)
        let events = try #require(delivery).events
        guard case .allFinished(let summary) = events.last else {
            Issue.record("no notice: \(events)")
            return
        }
        #expect(summary.failed.map(\.id) == [ids[0]] && summary.completed.map(\.id) == [ids[1]])
    }

    @Test func aResumedItemWaitsUntilItsStoppedRunHasEnded() throws {
        // The stopped run may still hold the `.part` (its cancel is carried out after the lock):
        // a new run of the name must not start before the old one reported its end.
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a")], to: &machine)
        let generation = actions.starts[0].generation
        _ = machine.attach(41, to: ids[0], generation: generation)

        let suspended = try machine.suspend(ids[0], now: 1)
        _ = machine.cleaned(suspended.cleaning, now: 1)
        let resumed = try machine.resume(ids[0], now: 2)
        #expect(resumed.starts.isEmpty)
        #expect(states(machine) == ["pending"])

        let ended = machine.runEnded(ids[0], generation: generation, .cancelled, now: 3)
        #expect(ended.cleaning == ["a"])
        let restarted = machine.cleaned(ended.cleaning, now: 3)
        #expect(restarted.starts.map(\.id) == [ids[0]])
        #expect(restarted.starts[0].generation != generation)
    }

    @Test func closeRemovesWhatStoppedRunsLeftAndTheirLateEndsTouchNothing() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("gone"), request("kept")], to: &machine)
        _ = machine.attach(41, to: ids[0], generation: actions.starts[0].generation)
        _ = machine.attach(42, to: ids[1], generation: actions.starts[1].generation)
        let cancelled = try machine.cancel(ids[0], now: 1)
        _ = machine.cleaned(cancelled.cleaning, now: 1)

        let closed = machine.close(now: 2)

        #expect(closed.cancels == [42])
        #expect(closed.unlinks == ["gone.part", "gone.part.meta"])
        // Another manager may own the directory now: the stopped runs' ends remove nothing.
        let late = machine.runEnded(ids[0], generation: actions.starts[0].generation, .cancelled, now: 3)
        let lateKept = machine.runEnded(ids[1], generation: actions.starts[1].generation, .cancelled, now: 3)
        #expect(late.unlinks.isEmpty && lateKept.unlinks.isEmpty)
        #expect(late.starts.isEmpty && lateKept.starts.isEmpty)
    }

    @Test func closeTellsEachRunningItemItIsPendingAgain() throws {
        // Found by the simulation of the real manager: the last update's snapshot said pending while
        // its events (none) left the item running.
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        _ = machine.attach(41, to: ids[0], generation: actions.starts[0].generation)
        let delivered = machine.beginNumberedDelivery(.now, now: 1)
        _ = machine.endDelivery(now: 1)
        #expect(delivered?.delivery.update.items.map(\.state) == [.running, .pending])

        _ = machine.close(now: 2)

        let final = machine.beginNumberedDelivery(.now, now: 2)
        let last = try #require(final).delivery.update
        #expect(last.events == [.changed(last.items[0])])
        #expect(last.items.map(\.state) == [.pending, .pending])
    }

    @Test func suspendingAndResumingBehindABlockedHeadLeavesNoGrowingQueue() throws {
        // One slot for host a, taken; b waits at the head; c is suspended and resumed again and
        // again behind it: each resume adds a slot, and the stale ones must not pile up.
        var machine = machine(limit: 4, perHost: 1)
        let (ids, _) = try add([request("a"), request("b"), request("c")], to: &machine)
        for round in 0..<scaledForTheRun(100_000) {
            _ = try machine.suspend(ids[2], now: UInt64(round))
            _ = try machine.resume(ids[2], now: UInt64(round))
        }
        #expect(machine.scheduler.queuedSlots <= 2 * machine.scheduler.pendingCount + 65)
        #expect(states(machine) == ["running", "pending", "pending"])
        // The order is kept: b, then c.
        let running = try #require(
            machine.items[ids[0]].flatMap { entry -> UInt64? in
                if case .running(let run) = entry.phase { return run.generation }
                return nil
            })
        let next = machine.runEnded(ids[0], generation: running, .completed, now: 1)
        #expect(next.starts.map(\.name) == ["b"])
    }
}
