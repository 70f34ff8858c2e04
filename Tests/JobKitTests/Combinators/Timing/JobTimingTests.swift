import Dispatch
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKit

@Suite struct JobTimingTests {
    /// A job that never completes by itself and records its cancellation; `started` is signalled once
    /// its cancel handler is registered.
    private func hanging(_ cancelled: Locked<Int>, started: DispatchSemaphore? = nil) -> Job<Int> {
        Job { controller in
            controller.onCancel { cancelled.withLock { $0 += 1 } }
            started?.signal()
        }
    }

    /// A job that finishes with `value` once `count` signals of `started` came (each within a minute):
    /// the losers of a race are running when it wins, so their cancel handlers run. (A loser cancelled
    /// before its body ran never runs it: a winner on a short timer made that a race with the load.)
    private func winning(_ value: Int, after started: DispatchSemaphore, count: Int) -> Job<Int> {
        Job { controller in
            DispatchQueue.global().async {
                for _ in 0..<count { _ = started.wait(timeout: .now() + 60) }
                controller.finish(value)
            }
        }
    }

    @Test func timeoutFailsWithTimedOutAndCancelsTheAttemptInFlight() async {
        let scheduler = TestScheduler()
        let cancelled = Locked(0)
        let started = DispatchSemaphore(value: 0)
        let waiter = Task {
            try await hanging(cancelled, started: started).timeout(.seconds(30), scheduler: scheduler).value
        }
        await scheduler.waitUntilScheduled()
        // The attempt must be in flight (its body has run) before the time runs out: a run cancelled
        // while still pending never runs its body, so it would have no handler to call.
        _ = await started.waitOffThePool("the body started")
        scheduler.advance(by: .seconds(29))
        #expect(cancelled.current == 0)
        scheduler.advance(by: .seconds(1))
        #expect((await waiter.result.failureError as? JobError) == .timedOut)
        #expect(cancelled.current == 1, "the attempt's onCancel ran")
    }

    @Test func aJobThatCompletesInTimeIsNotTimedOut() async throws {
        let scheduler = TestScheduler()
        #expect(try await Job.just(5).timeout(.seconds(1), scheduler: scheduler).value == 5)
        #expect(scheduler.scheduledCount == 0, "the timer was cancelled")
    }

    /// A job delayed by five virtual seconds, and whether its body started.
    private func delayedByFiveSeconds() -> (TestScheduler, Locked<Bool>, Job<Int>) {
        let scheduler = TestScheduler()
        let started = Locked(false)
        let job = Job<Int> {
            started.withLock { $0 = true }
            $0.finish(1)
        }.delay(.seconds(5), scheduler: scheduler)
        return (scheduler, started, job)
    }

    @Test func delayStartsTheJobOnlyAfterTheDelay() async throws {
        let (scheduler, started, job) = delayedByFiveSeconds()
        let waiter = Task { try await job.value }
        await scheduler.waitUntilScheduled()
        scheduler.advance(by: .seconds(4))
        #expect(!started.current)
        scheduler.advance(by: .seconds(1))
        #expect(try await waiter.value == 1)
    }

    @Test func cancellingDuringADelayMeansTheJobNeverStarts() async {
        let (scheduler, started, job) = delayedByFiveSeconds()
        let waiter = Task { try await job.value }
        await scheduler.waitUntilScheduled()
        waiter.cancel()
        #expect((await waiter.result.failureError as? JobError) == .cancelled)
        scheduler.run()
        #expect(!started.current)
    }

    @Test func raceTakesTheFirstAndCancelsTheLosers() async throws {
        let (cancelled, started) = (Locked(0), DispatchSemaphore(value: 0))
        let winner = winning(1, after: started, count: 2)
        let losers = (hanging(cancelled, started: started), hanging(cancelled, started: started))
        #expect(try await Job.race([losers.0, winner, losers.1]).value == 1)
        #expect(cancelled.current == 2)
    }

    @Test func firstSuccessSkipsFailuresAndAggregatesWhenAllFail() async throws {
        let (cancelled, started) = (Locked(0), DispatchSemaphore(value: 0))
        let jobs: [Job<Int>] = [
            .failure(TestError(id: 1)), winning(2, after: started, count: 1), hanging(cancelled, started: started),
        ]
        #expect(try await Job.firstSuccess(jobs).value == 2)
        #expect(cancelled.current == 1)
        let result = await Job<Int>.firstSuccess([.failure(TestError(id: 1)), .failure(TestError(id: 2))]).outcome()
        let errors = (result.failureError as? AllJobsFailed)?.errors.compactMap { $0 as? TestError }
        #expect(errors == [TestError(id: 1), TestError(id: 2)])
    }
}
