import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A cancel, suspend or remove that arrives once a run's file is taking its name.
@Suite struct DownloadManagerLateControlTests {
    typealias Machine = DownloadManagerStateMachine<Int>

    func finalizingItem() throws -> (Machine, DownloadManager.ItemID, UInt64) {
        var machine = Machine(
            directory: URL(fileURLWithPath: "/downloads"), limit: 2, perHost: nil, interval: .milliseconds(100),
            window: .seconds(5))
        let (ids, actions) = machine.commit(
            try machine.prepare([.init(url: URL(string: "https://a.example/a")!)]), now: 0)
        let generation = actions.starts[0].generation
        _ = machine.attach(7, to: ids[0], generation: generation)
        let finishing = machine.finishing(ids[0], generation: generation, size: 10)
        #expect(finishing)
        return (machine, ids[0], generation)
    }

    @Test func aCancelOrSuspendAfterFinishingIsTooLateAndTheItemCompletes() throws {
        var (machine, id, generation) = try finalizingItem()

        let cancelled = try machine.cancel(id, now: 1)
        let suspended = try machine.suspend(id, now: 1)

        #expect(cancelled.cancels.isEmpty && cancelled.unlinks.isEmpty)
        #expect(suspended.cancels.isEmpty)
        #expect(machine.item(id, now: 1).state == .running)
        _ = machine.runEnded(id, generation: generation, .completed, now: 2)
        #expect(machine.item(id, now: 2).state == .completed)
        #expect(machine.journalEntries.map(\.status) == [.completed(size: 10)])
    }

    @Test func aRemoveAfterFinishingLetsTheRunEndThenDeletesTheFileWhenAsked() throws {
        var (machine, id, generation) = try finalizingItem()

        let removed = try machine.remove(id, deletingFile: true, now: 1)

        #expect(removed.cancels.isEmpty, "the rename is not interrupted")
        #expect(removed.unlinks.isEmpty)
        #expect(machine.itemIfAny(id, now: 1) == nil)
        #expect(machine.isCleaning("a"), "the name waits for the run")
        // The same name added again does not start before the file is gone.
        let (_, added) = machine.commit(try machine.prepare([.init(url: URL(string: "https://a.example/a")!)]), now: 2)
        #expect(added.starts.isEmpty)
        let ended = machine.runEnded(id, generation: generation, .completed, now: 3)
        #expect(ended.unlinks == ["a"])
        let cleaned = machine.cleaned(ended.cleaning, now: 4)
        #expect(cleaned.starts.map(\.name) == ["a"])
    }

    @Test func aRemoveAfterFinishingKeepsTheFileUnlessAsked() throws {
        var (machine, id, generation) = try finalizingItem()
        _ = try machine.remove(id, deletingFile: false, now: 1)

        let ended = machine.runEnded(id, generation: generation, .completed, now: 2)

        #expect(ended.unlinks.isEmpty, "like a removed completed item's, the file stays")
        #expect(ended.cleaning == ["a"])
        _ = machine.cleaned(ended.cleaning, now: 3)
        #expect(!machine.isCleaning("a"))
        // A rename that failed leaves a .part nobody owns: it goes.
        var (other, otherID, otherGeneration) = try finalizingItem()
        _ = try other.remove(otherID, deletingFile: false, now: 1)
        let failed = other.runEnded(
            otherID, generation: otherGeneration, .failed(.init(kind: .other, message: "rename failed")), now: 2)
        #expect(failed.unlinks == ["a.part", "a.part.meta"])
    }
}
