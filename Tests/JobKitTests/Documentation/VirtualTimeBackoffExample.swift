// The second sample of JobKitTesting.docc/TestingWithVirtualTime.md, verbatim: .ci/check-samples.py fails if
// the two differ, so the article's example is a test that runs.
import JobKit
import JobKitTesting
import Testing

@Test func retryWaitsTwiceAsLongEachTime() async throws {
    let scheduler = TestScheduler()
    let failing = Job<Int>.failure(Flaky())
    let backoff = Backoff.exponential(initial: .seconds(1), maximum: .seconds(60), jitter: 0)
    let waiter = Task { try await failing.retry(3, backoff: backoff, scheduler: scheduler).value }
    await scheduler.waitUntilScheduled()
    #expect(scheduler.scheduledDelays == [.seconds(1)])
    scheduler.advance(by: .seconds(1))
    await scheduler.waitUntilScheduled()
    #expect(scheduler.scheduledDelays == [.seconds(2)])
    scheduler.advance(by: .seconds(2))
    await #expect(throws: Flaky.self) { try await waiter.value }
}

/// The error of the article's flaky service.
private struct Flaky: Error {}
