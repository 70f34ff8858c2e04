import Dispatch
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKit

@Suite struct JobRetryTests {
    struct Flaky: Error, RetryAfterProviding {
        var retryAfter: Duration?
    }

    /// Fails with `error(attempt)` until attempt `succeedOn`, counting attempts.
    private func flaky(
        attempts: Locked<Int>, succeedOn: Int = .max, error: @escaping @Sendable (Int) -> any Error = { _ in Flaky() }
    ) -> Job<Int> {
        Job { controller in
            let attempt = attempts.withLock {
                $0 += 1; return $0
            }
            attempt >= succeedOn ? controller.finish(attempt) : controller.fail(with: error(attempt))
        }
    }

    @Test func exponentialBackoffFollowsTheExactScheduleUpToTheMaximum() async throws {
        let scheduler = TestScheduler()
        let attempts = Locked(0)
        let job = flaky(attempts: attempts, succeedOn: 6).retry(
            6, backoff: .exponential(initial: .seconds(1), multiplier: 2, maximum: .seconds(5)), scheduler: scheduler)
        let waiter = Task { try await job.value }
        var waits: [Duration] = []
        for attempt in 1..<6 {
            await scheduler.waitUntilScheduled()
            #expect(attempts.current == attempt)
            waits.append(contentsOf: scheduler.scheduledDelays)
            scheduler.advance(by: scheduler.scheduledDelays[0])
        }
        #expect(try await waiter.value == 6)
        #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
        #expect(scheduler.now == .seconds(17))
    }

    @Test func jitterStaysWithinItsBoundsAndTheMaximum() {
        let backoff = Backoff.exponential(initial: .seconds(2), multiplier: 2, maximum: .seconds(10), jitter: 0.25)
        #expect(backoff.delay(beforeRetry: 1, unitRandom: 0) == .seconds(1.5))
        #expect(backoff.delay(beforeRetry: 1, unitRandom: 1) == .seconds(2.5))
        #expect(backoff.delay(beforeRetry: 1, unitRandom: 0.5) == .seconds(2))
        #expect(backoff.delay(beforeRetry: 4, unitRandom: 1) == .seconds(10), "never above the maximum")
        #expect(backoff.delay(beforeRetry: 4, unitRandom: 0) == .seconds(7.5))
        for retry in 1...8 {
            let delay = backoff.delay(beforeRetry: retry)
            #expect(delay >= .seconds(1.5) && delay <= .seconds(10))
        }
        #expect(Backoff.constant(.seconds(3)).delay(beforeRetry: 9) == .seconds(3))
        #expect(Backoff.none.delay(beforeRetry: 1) == .zero)
    }

    @Test func aSuggestedDelayIsHonoured() async throws {
        let scheduler = TestScheduler()
        let attempts = Locked(0)
        let job = flaky(attempts: attempts, succeedOn: 2, error: { _ in Flaky(retryAfter: .seconds(7)) })
            .retry(3, backoff: .constant(.seconds(1)), scheduler: scheduler)
        let waiter = Task { try await job.value }
        await scheduler.waitUntilScheduled()
        #expect(scheduler.scheduledDelays == [.seconds(7)])
        scheduler.advance(by: .seconds(7))
        #expect(try await waiter.value == 2)
    }

    @Test func retryStopsAtTheAttemptLimitWithTheLastError() async {
        let attempts = Locked(0)
        let job = flaky(attempts: attempts, error: { TestError(id: $0) }).retry(3)
        await #expect(throws: TestError(id: 3)) { try await job.value }
        #expect(attempts.current == 3)
    }

    @Test func retryStopsOnANonRetryableError() async {
        let attempts = Locked(0)
        let job = flaky(attempts: attempts, error: { TestError(id: $0) }).retry(5) { ($0 as? TestError)?.id != 2 }
        await #expect(throws: TestError(id: 2)) { try await job.value }
        #expect(attempts.current == 2)
    }

    @Test func cancellingStopsFurtherAttemptsAtOnce() async {
        let scheduler = TestScheduler()
        let attempts = Locked(0)
        let job = flaky(attempts: attempts).retry(10, backoff: .constant(.seconds(1)), scheduler: scheduler)
        let waiter = Task { try await job.value }
        await scheduler.waitUntilScheduled()
        waiter.cancel()
        #expect((await waiter.result.failureError as? JobError) == .cancelled)
        scheduler.run()
        #expect(attempts.current == 1)
        #expect(scheduler.scheduledCount == 0)
    }
}
