import Dispatch
import Foundation
import JobKit
import Testing

@testable import JobKitNetworking

/// `RunProgress` and `ProgressTally`: byte counts taken without the manager's lock.
@Suite struct RunProgressTests {
    @Test func aChunkTellsTheManagerOnlyWhenNoDeliveryWaits() {
        let tally = ProgressTally()
        let run = RunProgress(tally: tally)

        #expect(run.add(10), "nothing waits yet: the manager is told")
        tally.setDeliveryWaiting(true)
        for _ in 0..<1_000 { #expect(!run.add(1)) }
        #expect(run.bytes == 1_010)
        #expect(tally.unfoldedBytes == 1_010)
        // A delivery begins: the next chunk tells again.
        tally.setDeliveryWaiting(false)
        #expect(run.add(5))
        #expect(run.take() == 1_015)
        #expect(run.bytes == 0)
        #expect(tally.unfoldedBytes == 0)
    }

    @Test func countsFromServersSaturateAndNegativeCountsAreNothing() {
        let tally = ProgressTally()
        let runs = [RunProgress(tally: tally), RunProgress(tally: tally)]
        for run in runs {
            _ = run.add(.max)
            _ = run.add(.max)
            _ = run.add(-5)
        }
        #expect(runs[0].bytes == .max)
        #expect(tally.unfoldedBytes >= 0, "past Int64.max in all, it is never negative")
        #expect(runs[0].take() == .max)
        #expect(runs[1].take() == .max)
        #expect(runs[0].bytes == 0)
        #expect(tally.unfoldedBytes == 0, "every taking cancels its additions exactly")
    }

    @Test func aSaturatedRunLeavesNothingInTheTallyOnceTaken() {
        let tally = ProgressTally()
        let run = RunProgress(tally: tally)
        _ = run.add(.max)
        _ = run.add(10)
        #expect(tally.unfoldedBytes == .max)
        #expect(run.take(retiring: true) == .max)
        let other = RunProgress(tally: tally)
        _ = other.add(7)
        #expect(tally.unfoldedBytes == 7, "the bytes past the saturated count were never counted")
    }

    @Test func aRetiredRunCountsNothingAndTellsNobody() {
        let tally = ProgressTally()
        let run = RunProgress(tally: tally)
        _ = run.add(100)
        #expect(run.take(retiring: true) == 100)
        #expect(!run.add(5_000), "a stopped run's late chunk")
        #expect(run.bytes == 0)
        #expect(run.take() == 0)
        #expect(tally.unfoldedBytes == 0)
    }

    @Test func runsShareTheTallyAndEachTakesItsOwn() {
        let tally = ProgressTally()
        let runs = (0..<3).map { _ in RunProgress(tally: tally) }
        for (index, run) in runs.enumerated() { _ = run.add(100 * (index + 1)) }
        #expect(tally.unfoldedBytes == 600)
        #expect(runs[1].take() == 200)
        #expect(tally.unfoldedBytes == 400)
        #expect(runs[0] == runs[0] && runs[0] != runs[1], "a run's counter is itself")
    }

    /// Four threads count while a "delivery" (under a lock, as the manager's) clears the flag and
    /// takes the counts: nothing is lost, and the manager is told rarely.
    @Test func concurrentChunksAndDeliveriesLoseNoByteAndTellRarely() async {
        let tally = ProgressTally()
        let runs = (0..<4).map { _ in RunProgress(tally: tally) }
        let state = LockedBox<(taken: Int64, tells: Int, deliveries: Int)>.make((0, 0, 0))
        let perThread = 50_000
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            if worker == 4 {
                for _ in 0..<2_000 {
                    state.withLock { state in
                        tally.setDeliveryWaiting(false)
                        state.taken += runs.reduce(0) { $0 + $1.take() }
                        state.deliveries += 1
                    }
                }
                return
            }
            for _ in 0..<perThread where runs[worker].add(1) {
                state.withLock { state in
                    tally.setDeliveryWaiting(true)
                    state.tells += 1
                }
            }
        }
        let (taken, tells, deliveries) = state.withLock { ($0.taken, $0.tells, $0.deliveries) }
        let left = runs.reduce(0) { $0 + $1.take() }
        #expect(taken + left == Int64(4 * perThread))
        #expect(tally.unfoldedBytes == 0)
        // At most one tell per thread between two deliveries, plus each thread's first.
        #expect(tells <= 4 * (deliveries + 1))
    }
}
