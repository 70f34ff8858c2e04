import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `DownloadManager`'s state machine between a run's `finishing` record and its end: the `.part`
/// may already have taken the name.
@Suite struct DownloadManagerFinalizingTests {
    typealias Machine = DownloadManagerStateMachine<Int>

    func machine() -> Machine {
        Machine(
            directory: URL(fileURLWithPath: "/downloads"), limit: 2, perHost: nil, interval: .milliseconds(100),
            window: .seconds(5))
    }

    func add(_ names: [String], to machine: inout Machine) throws -> (ids: [DownloadManager.ItemID], tokens: [UInt64]) {
        let prepared = try machine.prepare(names.map { .init(url: URL(string: "https://a.example/\($0)")!) })
        let (ids, actions) = machine.commit(prepared, now: 0)
        return (ids, actions.starts.map(\.token))
    }

    @Test func aCompactionBetweenFinishingAndDoneKeepsTheFileDoneForTheNextManager() throws {
        var machine = machine()
        let (ids, tokens) = try add(["a"], to: &machine)
        let finishing = machine.finishing(ids[0], token: tokens[0], size: 10)
        #expect(finishing)

        // The journal is compacted now, and the process is killed before `done`.
        guard case .rewrite(let header, let records) = machine.compacted() else {
            Issue.record("expected a rewrite")
            return
        }
        let contents = try DownloadJournal.parse(DownloadJournal.encode(header: header, records))

        #expect(contents.entries.map(\.status) == [.finishing(size: 10)])
        // The rename happened: the file is done, not fetched again.
        #expect(
            DownloadManager.restoredStatus(contents.entries[0], file: .file(size: 10), partExists: false)
                == .completed(size: 10))
        // It did not: the `.part` resumes, and the file under the name is still the manager's.
        #expect(DownloadManager.restoredStatus(contents.entries[0], file: .missing, partExists: true) == .pending)
        #expect(contents.entries[0].ownsFile)
    }

    @Test func closingBetweenFinishingAndDoneKeepsTheFinishingRecord() throws {
        var machine = machine()
        let (ids, tokens) = try add(["a"], to: &machine)
        let finishing = machine.finishing(ids[0], token: tokens[0], size: 10)
        #expect(finishing)
        _ = machine.close(now: 1)

        #expect(machine.journalEntries.map(\.status) == [.finishing(size: 10)])
    }
}

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
        let ended = machine.runEnded(ids[0], token: actions.starts[0].token, .cancelled, now: 4)
        #expect(ended.unlinks.isEmpty, "pending again, the item resumes from what the run left")
        #expect(machine.cleaned(ended.cleaning, now: 4).starts.map(\.id) == ids)
    }

    @Test func aNameAddedAgainBeforeTheRemovedItemsFilesAreUnlinkedWaitsForTheUnlink() throws {
        var machine = machine(limit: 3)
        let (ids, actions) = machine.commit(try machine.prepare([request("a"), request("b")]), now: 0)
        let finishing = machine.finishing(ids[0], token: actions.starts[0].token, size: 10)
        #expect(finishing)
        _ = machine.runEnded(ids[0], token: actions.starts[0].token, .completed, now: 1)
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
        let ended = machine.runEnded(ids[0], token: actions.starts[0].token, .cancelled, now: 4)
        #expect(ended.unlinks.isEmpty)
        #expect(ended.cleaning == ["a"], "the name is released")
        _ = machine.cleaned(ended.cleaning, now: 4)
        let resumedAgain = try machine.resume(ids[0], now: 5)
        #expect(resumedAgain.starts.count == 1)
        #expect(resumedAgain.starts.first?.token != actions.starts[0].token)
    }
}

/// A cancel, suspend or remove that arrives once a run's file is taking its name.
@Suite struct DownloadManagerLateControlTests {
    typealias Machine = DownloadManagerStateMachine<Int>

    func finalizingItem() throws -> (Machine, DownloadManager.ItemID, UInt64) {
        var machine = Machine(
            directory: URL(fileURLWithPath: "/downloads"), limit: 2, perHost: nil, interval: .milliseconds(100),
            window: .seconds(5))
        let (ids, actions) = machine.commit(
            try machine.prepare([.init(url: URL(string: "https://a.example/a")!)]), now: 0)
        let token = actions.starts[0].token
        _ = machine.attach(7, to: ids[0], token: token)
        let finishing = machine.finishing(ids[0], token: token, size: 10)
        #expect(finishing)
        return (machine, ids[0], token)
    }

    @Test func aCancelOrSuspendAfterFinishingIsTooLateAndTheItemCompletes() throws {
        var (machine, id, token) = try finalizingItem()

        let cancelled = try machine.cancel(id, now: 1)
        let suspended = try machine.suspend(id, now: 1)

        #expect(cancelled.cancels.isEmpty && cancelled.unlinks.isEmpty)
        #expect(suspended.cancels.isEmpty)
        #expect(machine.item(id, now: 1).state == .running)
        _ = machine.runEnded(id, token: token, .completed, now: 2)
        #expect(machine.item(id, now: 2).state == .completed)
        #expect(machine.journalEntries.map(\.status) == [.completed(size: 10)])
    }

    @Test func aRemoveAfterFinishingLetsTheRunEndThenDeletesTheFileWhenAsked() throws {
        var (machine, id, token) = try finalizingItem()

        let removed = try machine.remove(id, deletingFile: true, now: 1)

        #expect(removed.cancels.isEmpty, "the rename is not interrupted")
        #expect(removed.unlinks.isEmpty)
        #expect(machine.itemIfAny(id, now: 1) == nil)
        #expect(machine.isCleaning("a"), "the name waits for the run")
        // The same name added again does not start before the file is gone.
        let (_, added) = machine.commit(try machine.prepare([.init(url: URL(string: "https://a.example/a")!)]), now: 2)
        #expect(added.starts.isEmpty)
        let ended = machine.runEnded(id, token: token, .completed, now: 3)
        #expect(ended.unlinks == ["a"])
        let cleaned = machine.cleaned(ended.cleaning, now: 4)
        #expect(cleaned.starts.map(\.name) == ["a"])
    }

    @Test func aRemoveAfterFinishingKeepsTheFileUnlessAsked() throws {
        var (machine, id, token) = try finalizingItem()
        _ = try machine.remove(id, deletingFile: false, now: 1)

        let ended = machine.runEnded(id, token: token, .completed, now: 2)

        #expect(ended.unlinks.isEmpty, "like a removed completed item's, the file stays")
        #expect(ended.cleaning == ["a"])
        _ = machine.cleaned(ended.cleaning, now: 3)
        #expect(!machine.isCleaning("a"))
        // A rename that failed leaves a .part nobody owns: it goes.
        var (other, otherID, otherToken) = try finalizingItem()
        _ = try other.remove(otherID, deletingFile: false, now: 1)
        let failed = other.runEnded(
            otherID, token: otherToken, .failed(.init(kind: .other, message: "rename failed")), now: 2)
        #expect(failed.unlinks == ["a.part", "a.part.meta"])
    }
}
