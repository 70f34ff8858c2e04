import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct ProgressTreeTests {
    private func reporting(_ fraction: Double, gate: DispatchSemaphore) -> Job<Void> {
        Job { controller in
            controller.report(progress: fraction)
            controller.queue.async {
                _ = wait(for: gate)
                controller.finish()
            }
        }
    }

    @Test func groupProgressIsATreeOfItsMembersReachingExactlyOne() async {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let jobs = (0..<4).map { _ in
            Job<Void> { controller in
                controller.report(progress: 0.5)
                started.signal()
                controller.queue.async {
                    _ = wait(for: gate)
                    controller.finish()
                }
            }
        }
        let handleBox = Locked<JobHandle?>(nil)
        let final = await withContinuationOffThePool("the run's handler") { continuation in
            let handle = Job.group(jobs).perform(resultQueue: resultQueue) { _ in
                continuation.resume(returning: handleBox.current!.progress.fractionCompleted)
            }
            handleBox.withLock { $0 = handle }
            for _ in 0..<4 { _ = wait(for: started) }
            let progress = handle.progress
            #expect(progress.totalUnitCount == 4)
            #expect(abs(progress.fractionCompleted - 0.5) < 1e-9, "four members at half way")
            for _ in 0..<4 { gate.signal() }
        }
        #expect(final == 1.0)
    }

    @Test func progressAskedBeforeTheGroupStartsStillBecomesATree() async {
        let queue = DispatchQueue(label: "suspended")
        queue.suspend()
        let handleBox = Locked<JobHandle?>(nil)
        let result = await awaitCallback("the run's handler") { continuation in
            let handle = Job.sequence([.empty, .empty, .empty]).perform(on: queue, resultQueue: resultQueue) {
                continuation.resume(returning: $0)
            }
            handleBox.withLock { $0 = handle }
            #expect(handle.progress.fractionCompleted == 0)
            queue.resume()
        }
        #expect((try? result?.get()) != nil)
        #expect(handleBox.current!.progress.fractionCompleted == 1.0)
        #expect(handleBox.current!.progress.totalUnitCount == 3)
    }

    @Test func emptyGroupProgressReadsOne() async throws {
        let handleBox = Locked<JobHandle?>(nil)
        _ = await awaitCallback("the run's handler") { continuation in
            handleBox.withLock {
                $0 = Job.group([]).perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            }
        }
        #expect(handleBox.current!.progress.fractionCompleted == 1.0)
    }

    @Test func cancellingAGroupsProgressCancelsTheRunAndItsMembers() async {
        let cancelled = Locked(0)
        let started = DispatchSemaphore(value: 0)
        let jobs = (0..<3).map { _ in
            Job<Void> { controller in
                controller.onCancel { cancelled.withLock { $0 += 1 } }
                started.signal()
            }
        }
        let result = await withContinuationOffThePool("the run's handler") { continuation in
            let handle = Job.group(jobs).perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            for _ in 0..<3 { _ = wait(for: started) }
            handle.progress.cancel()
        }
        #expect(isCancelled(result))
        #expect(cancelled.current == 3)
    }
}
