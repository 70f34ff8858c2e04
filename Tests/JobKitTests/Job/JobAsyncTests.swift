import Dispatch
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobAsyncTests {
    @Test func operationJobsDeliverTheirValue() async throws {
        let job = Job<Int> {
            await Task.yield()
            return 5
        }
        #expect(try await job.value == 5)
        #expect(try await job.outcome().get() == 5)
    }

    @Test func operationErrorsPassThrough() async {
        let job = Job<Int> { throw TestError(id: 3) }
        await #expect(throws: TestError(id: 3)) { try await job.value }
    }

    @Test func cancellingTheRunCancelsTheSwiftTaskAndCompletesAsJobCancelled() async {
        let taskSawCancellation = Locked(false)
        let entered = Locked<CheckedContinuation<Void, Never>?>(nil)
        let job = Job<Int> {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in entered.withLock { $0 = continuation } }
            } onCancel: {
                taskSawCancellation.withLock { $0 = true }
                entered.withLock {
                    $0?.resume(); $0 = nil
                }
            }
            try Task.checkCancellation()
            return 1
        }
        let result = await awaitCallback("the run's handler") { continuation in
            let handle = job.perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            Task {
                while entered.current == nil { await Task.yield() }
                handle.cancel()
            }
        }
        #expect(isCancelled(result), "JobError.cancelled, not the task's CancellationError")
        #expect(taskSawCancellation.current)
    }

    @Test func cancellingTheAwaitingTaskCancelsTheRun() async {
        let onCancelRan = Locked(false)
        let started = Locked(false)
        let job = Job<Int> { controller in
            controller.onCancel { onCancelRan.withLock { $0 = true } }
            started.withLock { $0 = true }
        }
        let waiter = Task { try await job.value }
        while !started.current { await Task.yield() }
        waiter.cancel()
        let result = await waiter.result
        #expect((result.failureError as? JobError) == .cancelled)
        #expect(onCancelRan.current)
    }

    @Test func awaitingInACancelledTaskNeverStartsTheBody() async {
        let ran = Locked(false)
        let job = Job<Int> { controller in
            ran.withLock { $0 = true }
            controller.finish(1)
        }
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await job.value
        }
        let result = await waiter.result
        #expect((result.failureError as? JobError) == .cancelled)
        #expect(!ran.current)
    }

    @Test func groupsOfOperationsAwaitTogether() async throws {
        let jobs = (0..<10).map { index in Job<Int> { index * 2 } }
        #expect(try await Job.collect(jobs, maxConcurrent: 3).value == (0..<10).map { $0 * 2 })
    }
}
