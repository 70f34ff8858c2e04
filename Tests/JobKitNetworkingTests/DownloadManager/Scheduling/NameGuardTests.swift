import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The download manager's name guard alone: nothing of a name starts until its previous run has
/// ended and its files are gone.
@Suite struct NameGuardTests {
    let parts = ["a.part", "a.part.meta"]

    @Test func anEmptyGuardHoldsNoName() {
        var names = NameGuard()
        #expect(names.isEmpty && !names.isHeld("a") && names.holdCount(of: "a") == 0)
        names.release(["a"])
        #expect(names.isEmpty, "releasing a name that is not held does nothing")
        #expect(names.runEnded(1, completed: true) { _ in false } == NameGuard.Cleanup())
        #expect(names.close { _ in false }.isEmpty)
    }

    @Test func aNameIsHeldUntilItsUnlinksAreDone() {
        var names = NameGuard()
        let cleanup = names.clean("a", parts)
        #expect(cleanup == NameGuard.Cleanup(unlinks: parts, names: ["a"]))
        #expect(names.isHeld("a") && !names.isHeld("b") && !names.isEmpty)
        names.release(cleanup.names)
        #expect(!names.isHeld("a") && names.isEmpty)
    }

    @Test func aStoppedRunHoldsItsNameUntilItEndsAndItsCleanupIsDone() {
        var names = NameGuard()
        names.stopped(run: 7, of: "a")
        #expect(names.isHeld("a") && names.stoppedRunCount == 1)
        let ended = names.runEnded(7, completed: false) { _ in false }
        #expect(ended == NameGuard.Cleanup(unlinks: [], names: ["a"]), "a suspended run's .part stays")
        #expect(names.isHeld("a"), "held until the executor says the cleanup is done")
        names.release(ended.names)
        #expect(names.isEmpty && names.stoppedRunCount == 0)
        #expect(names.runEnded(7, completed: false) { _ in false } == NameGuard.Cleanup(), "a run ends once")
    }

    @Test func aCancelledRunsEndRemovesItsPartUnlessTheNameHoldsItAgain() {
        var names = NameGuard()
        names.stopped(run: 1, of: "a", removingPart: parts)
        let removed = names.runEnded(1, completed: false) { _ in false }
        #expect(removed.unlinks == parts && removed.names == ["a", "a"])
        #expect(names.holdCount(of: "a") == 2, "the stop's hold and the unlink's")
        names.release(removed.names)
        #expect(names.isEmpty)

        names.stopped(run: 2, of: "a", removingPart: parts)
        let kept = names.runEnded(2, completed: false) { $0 == "a" }
        #expect(kept.unlinks.isEmpty && kept.names == ["a"], "an item of the name resumes from it")
        names.release(kept.names)
        #expect(names.isEmpty)
    }

    @Test func aRunRemovedWhileFinalizingLeavesTheFileOrItsPart() {
        var names = NameGuard()
        names.removedWhileFinalizing(run: 1, of: "a", deletingFile: true)
        #expect(names.isHeld("a"))
        #expect(names.runEnded(1, completed: true) { _ in true } == .init(unlinks: ["a"], names: ["a"]))
        names.removedWhileFinalizing(run: 2, of: "a", deletingFile: false)
        #expect(names.runEnded(2, completed: true) { _ in true } == .init(unlinks: [], names: ["a"]))
        names.removedWhileFinalizing(run: 3, of: "a", deletingFile: true)
        #expect(names.runEnded(3, completed: false) { _ in true } == .init(unlinks: parts, names: ["a"]))
        names.release(["a", "a", "a"])
        #expect(names.isEmpty)
    }

    @Test func manyHoldsOfOneNameAreReleasedOneByOne() {
        var names = NameGuard()
        for _ in 0..<1000 { _ = names.clean("a", parts) }
        #expect(names.holdCount(of: "a") == 1000)
        for left in stride(from: 999, through: 0, by: -1) {
            names.release(["a"])
            #expect(names.holdCount(of: "a") == left)
        }
        #expect(names.isEmpty)
    }

    /// A million rounds, on a thread of their own (`offThePool`) rather than the tests' shared pool.
    @Test func aMillionStopsLeaveNothingBehind() async {
        let leftNothing = await offThePool { () -> Bool in
            var names = NameGuard()
            for generation in UInt64(1)...UInt64(scaledForTheRun(1_000_000)) {
                let name = "f\(generation % 16)"
                names.stopped(run: generation, of: name, removingPart: [name + ".part"])
                let cleanup = names.runEnded(generation, completed: false) { _ in false }
                names.release(cleanup.names)
            }
            return names.isEmpty && names.stoppedRunCount == 0
        }
        #expect(leftNothing)
    }

    @Test func closingRemovesWhatStoppedRunsLeftAndTheirLateEndsDoNothing() {
        var names = NameGuard()
        names.stopped(run: 1, of: "a", removingPart: parts)
        names.stopped(run: 2, of: "b", removingPart: ["b.part", "b.part.meta"])
        names.stopped(run: 3, of: "c")
        let unlinks = names.close { $0 == "b" }
        #expect(unlinks == parts, "b's .part is held again; c was suspended")
        #expect(names.stoppedRunCount == 0)
        #expect(names.runEnded(1, completed: false) { _ in false } == NameGuard.Cleanup())
        #expect(names.isHeld("a"), "holds stay: nothing starts after closing")
    }

    @Test func closingRemovesThePartOfARunRemovedWhileFinalizingButNotTheFile() {
        // Found by the simulation (issue 22): a run removed while finalizing whose rename then failed
        // (a folder under the name) ended after `close()`, which did nothing; the next manager's
        // journal no longer named the item, and its `.part` stayed for good.
        var names = NameGuard()
        names.removedWhileFinalizing(run: 1, of: "a", deletingFile: true)
        names.removedWhileFinalizing(run: 2, of: "b", deletingFile: false)
        let unlinks = names.close { $0 == "b" }
        #expect(unlinks == parts, "the .part and its metadata, never the name; b's is held again")
        #expect(names.runEnded(1, completed: true) { _ in false } == NameGuard.Cleanup())
    }
}
