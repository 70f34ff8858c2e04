import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The state machine's journal records, compaction, restore and close.
extension DownloadManagerStateMachineTests {
    @Test func theJournalGetsTheChangesThatMatterInOrderAndIsCompactedWhenItGrows() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        #expect(
            Machine.records(of: [
                .new(id: ids[0], url: URL(string: "https://a.example/a")!, name: "a", checksum: nil, replacing: false)
            ])
            .map(\.op) == [.add])
        let generation = actions.starts[0].generation
        _ = machine.received(ids[0], generation: generation, count: 10, now: 1)
        let progressRecords = machine.takeJournal()
        #expect(progressRecords == nil, "progress is never journaled")
        let finishing = machine.finishing(ids[0], generation: generation, size: 10)
        #expect(finishing)
        _ = machine.runEnded(ids[0], generation: generation, .completed, now: 2)
        _ = try machine.suspend(ids[1], now: 3)
        guard case .append(let records) = machine.takeJournal() else {
            Issue.record("expected an append")
            return
        }
        #expect(records.map(\.op) == [.finishing, .done, .state])
        #expect(records.map(\.size) == [10, 10, nil])
        #expect(records.last?.state == "suspended")

        // A thousand changes later, the journal is rewritten instead.
        for step in 0..<600 {
            _ = try machine.resume(ids[1], now: 10 + UInt64(step))
            _ = try machine.suspend(ids[1], now: 10 + UInt64(step))
        }
        guard case .rewrite(let header, let compacted) = machine.takeJournal() else {
            Issue.record("expected a rewrite")
            return
        }
        #expect(header.next == 3)
        #expect(compacted.map(\.op) == [.add, .done, .add, .state])
    }

    /// A removed item whose `.part` is not unlinked yet stays in a compacted journal, added and removed:
    /// a process that dies before the unlink (a failed write left it owed, a flush failed after the
    /// rewrite) leaves the next one its name to clean; else the `.part` would be nobody's, for good.
    @Test func aCompactedJournalKeepsARemovedItemUntilItsPartIsUnlinked() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b"), request("c")], to: &machine)
        let (generation, b) = (actions.starts[0].generation, actions.starts[1].generation)
        // b got bytes and was suspended (its run ended; c starts); a runs (its `.part` goes now, and
        // again when the run ends: it may write until then).
        _ = machine.received(ids[1], generation: b, count: 10, now: 1)
        _ = try machine.suspend(ids[1], now: 1)
        _ = machine.cleaned(machine.runEnded(ids[1], generation: b, .cancelled, now: 1).cleaning, now: 1)
        let removedB = try machine.remove(ids[1], deletingFile: false, now: 1)
        #expect(removedB.unlinks == ["b.part", "b.part.meta"])
        let removedA = try machine.remove(ids[0], deletingFile: false, now: 2)
        #expect(removedA.unlinks == ["a.part", "a.part.meta"])
        _ = machine.cleaned(removedA.cleaning, now: 2)
        func compacted() -> [String] {
            guard case .rewrite(_, let records) = machine.compacted() else { return ["not a rewrite"] }
            return records.map { "\($0.op.rawValue) \($0.id)\($0.name.map { " " + $0 } ?? "")" }
        }
        #expect(compacted() == ["add 1 a", "remove 1", "add 2 b", "remove 2", "add 3 c"], "removed first, by id")
        // A removed name that an item has again is that item's: no removal is kept for it.
        let (again, _) = try add([request("b2", name: "b")], to: &machine)
        #expect(compacted() == ["add 1 a", "remove 1", "add 3 c", "add 4 b"])
        let removedAgain = try machine.remove(again[0], deletingFile: false, now: 3)
        #expect(compacted() == ["add 1 a", "remove 1", "add 4 b", "remove 4", "add 3 c"])
        // Both removals of b are cleaned; a's run has not ended.
        _ = machine.cleaned(removedB.cleaning, now: 4)
        #expect(compacted() == ["add 1 a", "remove 1", "add 4 b", "remove 4", "add 3 c"], "one hold of b is left")
        _ = machine.cleaned(removedAgain.cleaning, now: 4)
        #expect(compacted() == ["add 1 a", "remove 1", "add 3 c"])
        let ended = machine.runEnded(ids[0], generation: generation, .cancelled, now: 5)
        #expect(ended.unlinks == ["a.part", "a.part.meta"])
        #expect(compacted() == ["add 1 a", "remove 1", "add 3 c"], "until the unlinks are done")
        _ = machine.cleaned(ended.cleaning, now: 6)
        #expect(compacted() == ["add 3 c"])
        #expect(machine.removedUncleaned.isEmpty)
    }

    /// An item suspended (or given a new URL) and then removed while its stopped run has not ended:
    /// the run may still write its `.part`, so its end removes the `.part` again, and the compacted
    /// journal keeps the item until then. An item removed before it ever ran leaves nothing to keep.
    @Test(arguments: ["suspend", "replaceURL", "cancel"])
    func aRunStoppedBeforeItsItemWasRemovedRemovesThePartWhenItEnds(_ stop: String) throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("never")], to: &machine)
        let generation = actions.starts[0].generation
        _ = try machine.remove(ids[1], deletingFile: false, now: 1)
        let stopped =
            switch stop {
            case "suspend": try machine.suspend(ids[0], now: 1)
            case "replaceURL": try machine.replaceURL(ids[0], with: URL(string: "https://b.example/a")!, now: 1)
            default: try machine.cancel(ids[0], now: 1)
            }
        let removed = try machine.remove(ids[0], deletingFile: false, now: 2)
        #expect(removed.unlinks == ["a.part", "a.part.meta"])
        _ = machine.cleaned(stopped.cleaning + removed.cleaning, now: 3)
        func kept() -> [UInt64] {
            guard case .rewrite(_, let records) = machine.compacted() else { return [] }
            return records.filter { $0.op == .remove }.map(\.id)
        }
        #expect(kept() == [ids[0].rawValue], "the stopped run may still write a.part; never ran: nothing to keep")
        let ended = machine.runEnded(ids[0], generation: generation, .cancelled, now: 5)
        #expect(ended.unlinks == ["a.part", "a.part.meta"])
        _ = machine.cleaned(ended.cleaning, now: 6)
        #expect(kept().isEmpty)
    }

    /// An item restored beside an empty `.part` (a killed run makes it before the first byte) and
    /// removed before it runs is kept by a compaction until that `.part` is unlinked: a process that
    /// dies between the two leaves the next one the name to clean (found by the simulation, with a
    /// crash inside a removal). One restored without a `.part` leaves nothing to keep.
    @Test func aCompactedJournalKeepsARemovedItemRestoredBesideAnEmptyPart() throws {
        var machine = machine(limit: 1)
        let url = { (name: String) in URL(string: "https://a.example/\(name)")! }
        let contents = DownloadJournal.Contents(
            entries: [
                .init(id: 1, url: url("empty"), name: "empty", status: .suspended),
                .init(id: 2, url: url("none"), name: "none", status: .suspended),
            ], nextID: 3)
        _ = machine.restore(contents, partLengths: [1: 0], now: 0)
        let empty = try machine.remove(ItemID(rawValue: 1), deletingFile: false, now: 1)
        let none = try machine.remove(ItemID(rawValue: 2), deletingFile: false, now: 1)
        #expect(empty.unlinks == ["empty.part", "empty.part.meta"])
        func compacted() -> [String] {
            guard case .rewrite(_, let records) = machine.compacted() else { return ["not a rewrite"] }
            return records.map { "\($0.op.rawValue) \($0.id)" }
        }
        #expect(compacted() == ["add 1", "remove 1"], "no .part was found for item 2")
        _ = machine.cleaned(empty.cleaning + none.cleaning, now: 2)
        #expect(compacted().isEmpty)
    }

    /// An item added under a name that a removed item's stopped run still holds may be left that
    /// run's `.part` (its end keeps it for the item of the name: `NameGuard.runEnded`): removed before
    /// it runs, it is kept by a compaction until its unlinks are done (found by a review).
    @Test(arguments: [false, true])
    func anItemAddedUnderAHeldNameIsKeptForTheCompactionsWhenRemoved(_ suspended: Bool) throws {
        var machine = machine(limit: 1)
        let (xs, actions) = try add([request("a")], to: &machine)
        let removedX = try machine.remove(xs[0], deletingFile: false, now: 1)
        _ = machine.cleaned(removedX.cleaning, now: 1)
        // Y of the name waits: behind another item, or suspended.
        if !suspended { _ = try add([request("z")], to: &machine) }
        let (ys, _) = try add([request("a2", name: "a")], to: &machine)
        if suspended { _ = try machine.suspend(ys[0], now: 1) }
        let ended = machine.runEnded(xs[0], generation: actions.starts[0].generation, .cancelled, now: 2)
        #expect(ended.unlinks.isEmpty, "the .part is kept for the item of the name")
        _ = machine.cleaned(ended.cleaning, now: 2)
        let removedY = try machine.remove(ys[0], deletingFile: false, now: 3)
        #expect(removedY.unlinks == ["a.part", "a.part.meta"])
        func kept() -> [UInt64] {
            guard case .rewrite(_, let records) = machine.compacted() else { return [] }
            return records.filter { $0.op == .remove }.map(\.id)
        }
        #expect(kept() == [ys[0].rawValue])
        _ = machine.cleaned(removedY.cleaning, now: 4)
        #expect(kept().isEmpty)
    }

    /// A `finishing` record that did not end in `done` is overruled on disk before any `.part` goes:
    /// else a recovery could take a file somebody put under the name, of the same size, for the
    /// item's (found by the simulation, seed 1110958435: the user's file was then deleted).
    @Test func aFinishThatDidNotGetTheNameIsSyncedBeforeAnyUnlink() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        let (a, b) = (actions.starts[0].generation, actions.starts[1].generation)
        let owed1 = machine.takeJournalSync()
        #expect(!owed1)
        // The rename failed (a file appeared under the name) after `finishing` was recorded.
        let finishingA = machine.finishing(ids[0], generation: a, size: 4)
        #expect(finishingA)
        let failure = DownloadManager.ItemError(kind: .fileInTheWay, message: "a exists")
        _ = machine.runEnded(ids[0], generation: a, .failed(failure), now: 1)
        let owed2 = machine.takeJournalSync()
        #expect(owed2)
        let owed3 = machine.takeJournalSync()
        #expect(!owed3, "taken once; a writer that fails owes it again")
        machine.oweJournalSync()
        let owed4 = machine.takeJournalSync()
        #expect(owed4)
        // Queued again and waiting: a compaction no longer says `finishing` for it.
        _ = try machine.resume(ids[0], now: 2)
        guard case .rewrite(_, let records) = machine.compacted() else {
            Issue.record("expected a rewrite")
            return
        }
        #expect(!records.contains { $0.id == ids[0].rawValue && $0.op == .finishing && $0.size == 4 })
        // Removed as it finished; its run then ends without the name: the `.part` goes after a sync.
        let finishingB = machine.finishing(ids[1], generation: b, size: 4)
        #expect(finishingB)
        _ = try machine.remove(ids[1], deletingFile: true, now: 3)
        let owed5 = machine.takeJournalSync()
        #expect(!owed5, "the removal itself unlinks nothing yet")
        let ended = machine.runEnded(ids[1], generation: b, .failed(failure), now: 4)
        #expect(ended.unlinks == ["b.part", "b.part.meta"])
        let owed6 = machine.takeJournalSync()
        #expect(owed6)
    }

    @Test func aRunThatNeverFinishedOwesNoSync() throws {
        var machine = machine(limit: 2)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        let failure = DownloadManager.ItemError(kind: .httpStatus, message: "HTTP 500", status: 500)
        _ = machine.runEnded(ids[0], generation: actions.starts[0].generation, .failed(failure), now: 1)
        _ = try machine.remove(ids[1], deletingFile: true, now: 2)
        let ended = machine.runEnded(ids[1], generation: actions.starts[1].generation, .cancelled, now: 3)
        #expect(ended.unlinks == ["b.part", "b.part.meta"])
        let owed7 = machine.takeJournalSync()
        #expect(!owed7)
    }

    @Test func restoredItemsComeBackWithTheirStatesAndPendingOnesStart() throws {
        var machine = machine(limit: 4)
        let url = { (name: String) in URL(string: "https://a.example/\(name)")! }
        let failure = DownloadManager.ItemError(kind: .httpStatus, message: "HTTP 404", status: 404)
        let contents = DownloadJournal.Contents(
            entries: [
                .init(id: 1, url: url("done"), name: "done", status: .completed(size: 7), ownsFile: true),
                .init(id: 2, url: url("part"), name: "part", status: .pending),
                .init(id: 3, url: url("held"), name: "held", status: .suspended),
                .init(id: 4, url: url("bad"), name: "bad", status: .failed(failure)),
                .init(id: 6, url: url("gone"), name: "gone", status: .cancelled),
            ], nextID: 9)

        let actions = machine.restore(contents, partLengths: [2: 1234], now: 0)

        #expect(actions.starts.map(\.name) == ["part"])
        #expect(actions.starts[0].replacesFile == false, "a restored item never replaces a file")
        #expect(states(machine) == ["completed", "running", "suspended", "failed", "cancelled"])
        #expect(machine.item(ItemID(rawValue: 2), now: 0).progress.received == 1234)
        #expect(machine.item(ItemID(rawValue: 1), now: 0).progress.received == 7)
        let (ids, _) = try add([request("new")], to: &machine)
        #expect(ids == [ItemID(rawValue: 9)], "ids go on from the journal's")
        #expect(throws: DownloadManagerError.nameTaken("done", by: ItemID(rawValue: 1))) {
            try machine.prepare([request("other", name: "done")])
        }
    }

    @Test func closingStopsEverythingAndKeepsRunningItemsPending() throws {
        var machine = machine(limit: 1)
        let (ids, actions) = try add([request("a"), request("b")], to: &machine)
        _ = machine.attach(3, to: ids[0], generation: actions.starts[0].generation)
        let closed = machine.close(now: 1)
        #expect(closed.cancels == [3])
        #expect(states(machine) == ["pending", "pending"])
        #expect(machine.journalEntries.map(\.status) == [.pending, .pending])
        let finishing = machine.finishing(ids[0], generation: actions.starts[0].generation, size: 1)
        #expect(!finishing, "no rename after close")
        #expect(throws: DownloadManagerError.closed) { try machine.prepare([request("c")]) }
        #expect(throws: DownloadManagerError.closed) { try machine.suspend(ids[1], now: 2) }
    }
}
