// The first sample of JobKitTesting.docc/TestingWithVirtualTime.md, verbatim: .ci/check-samples.py fails if
// the two differ, so the article's example is a test that runs.
import JobKit
import JobKitTesting
import Testing

@Test func slowRequestTimesOutAfterThirtySeconds() async throws {
    let scheduler = TestScheduler()
    let slow = Job<Int> { _ in }  // never finishes by itself
    let waiter = Task { try await slow.timeout(.seconds(30), scheduler: scheduler).value }
    await scheduler.waitUntilScheduled()  // the timeout armed its timer
    scheduler.advance(by: .seconds(29))
    scheduler.advance(by: .seconds(1))  // the timeout fires now
    await #expect(throws: JobError.timedOut) { try await waiter.value }
}
