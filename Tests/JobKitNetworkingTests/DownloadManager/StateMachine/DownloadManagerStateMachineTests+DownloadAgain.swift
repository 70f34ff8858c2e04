import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `downloadAgain` in the state machine alone: the journal keeps the item completed, from its old URL,
/// until the new file is about to take its name.
extension DownloadManagerStateMachineTests {
    /// A machine whose one item (from `https://a.example/a`) completed with 10 bytes, its records taken.
    private func completedItem() throws -> (Machine, ItemID) {
        var machine = machine(limit: 1)
        let (ids, added) = try add([request("a", name: "a.bin")], to: &machine)
        let generation = added.starts[0].generation
        let finishes = machine.finishing(ids[0], generation: generation, size: 10)
        #expect(finishes)
        _ = machine.runEnded(ids[0], generation: generation, .completed, now: 1)
        _ = machine.takeJournal()
        return (machine, ids[0])
    }

    /// The records `machine` hands out to append (nil: none; a rewrite is recorded as an issue).
    private func appended(_ machine: inout Machine) -> [DownloadJournal.Record]? {
        switch machine.takeJournal() {
        case nil: return nil
        case .append(let records)?: return records
        case .rewrite?:
            Issue.record("a rewrite, not an append")
            return nil
        }
    }

    private func journaled(_ machine: Machine) -> [String] {
        machine.journalEntries.map { "\($0.url.absoluteString) \($0.status)" }
    }

    @Test func aCompletedItemDownloadedAgainKeepsItsRecordUntilItsNewFileIsAboutToTakeTheName() throws {
        var (machine, id) = try completedItem()
        let new = URL(string: "https://b.example/a2")!

        let again = try machine.downloadAgain(id, from: new, now: 2)

        #expect(again.starts.map(\.url) == [new])
        #expect(again.starts.first?.replacesFile == true, "the new file replaces the old one")
        let none = appended(&machine)
        #expect(none == nil)
        #expect(journaled(machine) == ["https://a.example/a completed(size: 10)"])
        #expect(machine.item(id, now: 2).url == new)
        // Its failure, a suspension and a resume stay off the journal.
        let failure = DownloadManager.ItemError(kind: .httpStatus, message: "HTTP 500", status: 500)
        _ = machine.runEnded(id, generation: again.starts[0].generation, .failed(failure), now: 3)
        #expect(states(machine) == ["failed"])
        _ = try machine.suspend(id, now: 4)
        let resumed = try machine.resume(id, now: 5)
        let stillNone = appended(&machine)
        #expect(stillNone == nil)
        #expect(journaled(machine) == ["https://a.example/a completed(size: 10)"], "what a compaction writes")

        // The new file is about to take the name: `finishing`, with its URL.
        let generation = try #require(resumed.starts.first?.generation)
        let finishes = machine.finishing(id, generation: generation, size: 20)
        #expect(finishes)
        let finishing = appended(&machine)
        #expect(
            finishing == [DownloadJournal.Record(op: .finishing, id: id.rawValue, url: new.absoluteString, size: 20)],
            "one line: no crash lands between the new URL and its finishing")
        // From here the journal has the new file: a new URL is journaled after it.
        let signed = URL(string: "https://b.example/a2?signature=2")!
        _ = try machine.replaceURL(id, with: signed, now: 7)
        let url = appended(&machine)
        #expect(url == [.url(id.rawValue, signed)])
        _ = machine.runEnded(id, generation: generation, .completed, now: 8)
        #expect(journaled(machine) == ["https://b.example/a2?signature=2 completed(size: 20)"])
    }

    @Test func aFailureAfterTheNewFilesFinishingRecordWritesTheOldFilesRecordBack() throws {
        var (machine, id) = try completedItem()
        let new = URL(string: "https://b.example/a2")!
        let again = try machine.downloadAgain(id, from: new, now: 2)
        let generation = again.starts[0].generation
        let finishes = machine.finishing(id, generation: generation, size: 20)
        #expect(finishes)
        #expect(journaled(machine) == ["https://b.example/a2 finishing(size: 20)"])
        _ = appended(&machine)

        // The rename (or the journal's sync before it) failed: the old file is still under the name.
        let failure = DownloadManager.ItemError(kind: .other, message: "rename failed")
        _ = machine.runEnded(id, generation: generation, .failed(failure), now: 3)

        let records = appended(&machine)
        #expect(records == [.init(op: .done, id: id.rawValue, url: "https://a.example/a", size: 10)])
        #expect(journaled(machine) == ["https://a.example/a completed(size: 10)"])
        #expect(states(machine) == ["failed"])
    }

    @Test func anAddThatReplacesACompletedFileOfAnotherURLDownloadsItAgainWithItsHeaders() throws {
        var (machine, id) = try completedItem()
        let header = try DownloadManager.Header("Authorization", "Bearer t")
        var request = DownloadManager.Request(
            url: URL(string: "https://b.example/a2")!, name: "a.bin", replacesExistingFile: true, headers: [header])

        let (ids, added) = try add([request], to: &machine, now: 2)

        #expect(ids == [id])
        #expect(added.starts.map(\.headers) == [[header]])
        #expect(journaled(machine) == ["https://a.example/a completed(size: 10)"])
        request.replacesExistingFile = false
        request.url = URL(string: "https://c.example/a3")!
        #expect(throws: DownloadManagerError.nameTaken("a.bin", by: id)) { try machine.prepare([request]) }
    }

    @Test func aBatchMayReplaceACompletedFileOnceAndAnotherURLForItsNameIsRefused() throws {
        var (machine, id) = try completedItem()
        let replacing = { (url: String) in
            DownloadManager.Request(url: URL(string: url)!, name: "a.bin", replacesExistingFile: true)
        }
        #expect(throws: DownloadManagerError.nameTaken("a.bin", by: id)) {
            try machine.prepare([replacing("https://b.example/a2"), replacing("https://c.example/a3")])
        }
        #expect(throws: DownloadManagerError.nameTaken("a.bin", by: id)) {
            try machine.prepare([replacing("https://b.example/a2"), request("a", name: "a.bin")])
        }
        let (ids, added) = try add(
            [replacing("https://b.example/a2"), replacing("https://b.example/a2")], to: &machine)
        #expect(ids == [id, id])
        #expect(added.starts.map(\.url.absoluteString) == ["https://b.example/a2"])
    }

    @Test func aCancelledOrRemovedDownloadAgainIsJournaledAsTheCompletedItemOrItsRemoval() throws {
        var (machine, id) = try completedItem()
        _ = try machine.downloadAgain(id, from: URL(string: "https://b.example/a2")!, now: 2)
        _ = try machine.cancel(id, now: 3)
        let cancelled = appended(&machine)
        #expect(cancelled == nil)
        #expect(journaled(machine) == ["https://a.example/a completed(size: 10)"])
        _ = try machine.remove(id, deletingFile: false, now: 4)
        let removed = appended(&machine)
        #expect(removed == [DownloadJournal.Record(op: .remove, id: id.rawValue)])
    }

    @Test func anItemNotCompletedDownloadedAgainTakesTheURLAndIsQueuedAgain() throws {
        var machine = machine(limit: 1)
        let (ids, _) = try add([request("a", name: "a.bin"), request("b", name: "b.bin")], to: &machine)
        _ = try machine.suspend(ids[1], now: 1)
        let new = URL(string: "https://b.example/b2")!

        _ = try machine.downloadAgain(ids[1], from: new, now: 2)

        let records = appended(&machine)
        #expect(records?.suffix(2) == [.url(ids[1].rawValue, new), .state(ids[1].rawValue, .pending)])
        #expect(states(machine) == ["running", "pending"])
        #expect(machine.item(ids[1], now: 2).url == new)
        #expect(machine.scheduler.queued(for: "b.example") == [ids[1]])
    }

    @Test func aFinalizingItemGivenAURLOnAnotherHostGivesItsSlotBackWhereItTookIt() throws {
        var machine = machine(limit: 2, perHost: 1)
        let (ids, added) = try add([request("a"), request("b", host: "b.example")], to: &machine)
        let generation = added.starts[0].generation
        let finishes = machine.finishing(ids[0], generation: generation, size: 10)
        #expect(finishes)

        _ = try machine.replaceURL(ids[0], with: URL(string: "https://b.example/a")!, now: 1)
        _ = machine.runEnded(ids[0], generation: generation, .completed, now: 2)

        #expect(machine.scheduler.running(on: "a.example") == 0)
        #expect(machine.scheduler.running(on: "b.example") == 1)
        #expect(states(machine) == ["completed", "running"])
    }
}
