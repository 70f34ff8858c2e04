import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobTests {
    @Test func finishDeliversTheValue() async throws {
        let result = await Job<Int> { $0.finish(42) }.outcome()
        #expect(try result.get() == 42)
    }

    @Test func failDeliversTheErrorUnchanged() async {
        let result = await Job<Int> { $0.fail(with: TestError(id: 7)) }.outcome()
        #expect(result.failureError as? TestError == TestError(id: 7))
    }

    @Test func bodyRunsOnTheGivenQueueAndHandlerOnTheResultQueue() async {
        let work = TaggedQueue("work")
        let results = TaggedQueue("results")
        let onWork = Locked(false)
        let onResults = await awaitCallback("the run's handler") { continuation in
            Job<Void> { controller in
                onWork.withLock { $0 = work.isCurrent }
                controller.finish()
            }.perform(on: work.queue, resultQueue: results.queue) { _ in
                continuation.resume(returning: results.isCurrent)
            }
        }
        #expect(onWork.current)
        #expect(onResults == true)
    }

    @Test func handlerRunsExactlyOnceAfterFinalStateAndFullProgress() async {
        let handleBox = Locked<JobHandle?>(nil)
        let gate = DispatchSemaphore(value: 0)
        let (state, fraction) =
            await awaitCallback("the run's handler") { continuation in
                let handle = Job<Void> { controller in
                    _ = wait(for: gate)
                    controller.report(progress: 0.5)
                    controller.finish()
                }.perform(resultQueue: resultQueue) { _ in
                    let handle = handleBox.current!
                    continuation.resume(returning: (handle.state, handle.progress.fractionCompleted))
                }
                handleBox.withLock { $0 = handle }
                _ = handle.progress
                gate.signal()
            } ?? (.pending, -1)
        #expect(state == .finished)
        #expect(fraction == 1.0)
    }

    @Test func progressIsClampedAndNeverGoesBack() async {
        let seen = Locked<[JobState]>([])
        let handleBox = Locked<JobHandle?>(nil)
        let gate = DispatchSemaphore(value: 0)
        _ = await awaitCallback("the run's handler") { continuation in
            let handle = Job<Void> { controller in
                _ = wait(for: gate)
                for fraction in [0.25, 0.1, 0.6, 7, Double.nan] {
                    controller.report(progress: fraction)
                    seen.withLock { $0.append(handleBox.current!.state) }
                }
                controller.finish()
            }.perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            handleBox.withLock { $0 = handle }
            gate.signal()
        }
        #expect(
            seen.current == [
                .running(fraction: 0.25), .running(fraction: 0.25), .running(fraction: 0.6),
                .running(fraction: 1), .running(fraction: 1),
            ])
    }

    @Test func cancelBeforeStartMeansTheBodyNeverRuns() async {
        let queue = DispatchQueue(label: "suspended")
        queue.suspend()
        let ran = Locked(false)
        let result = await awaitCallback("the run's handler") { continuation in
            let handle = Job<Void> { controller in
                ran.withLock { $0 = true }
                controller.finish()
            }.perform(on: queue, resultQueue: resultQueue) { continuation.resume(returning: $0) }
            #expect(handle.state == .pending)
            handle.cancel()
            #expect(handle.state == .cancelled)
            queue.resume()
        }
        #expect(isCancelled(result))
        await awaitCallback("the run's handler") { continuation in queue.async { continuation.resume() } }
        #expect(!ran.current)
    }

    @Test func cancelRunsOnCancelHandlersOnceInOrderAndIgnoresTheLaterFinish() async {
        let calls = Locked<[Int]>([])
        let reports = Locked<[ObjectIdentifier]>([])
        let token = JobDiagnostics.addHandler { event in reports.withLock { $0.append(event.runID) } }
        defer { JobDiagnostics.removeHandler(token) }
        let handleBox = Locked<JobHandle?>(nil)
        let started = DispatchSemaphore(value: 0)
        let controllerBox = Locked<Job<Int>.Controller?>(nil)
        let result = await withContinuationOffThePool("the run's handler") { continuation in
            let handle = Job<Int> { controller in
                controller.onCancel { calls.withLock { $0.append(1) } }
                controller.onCancel { calls.withLock { $0.append(2) } }
                controllerBox.withLock { $0 = controller }
                started.signal()
            }.perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            handleBox.withLock { $0 = handle }
            _ = wait(for: started)
            handle.cancel()
            handle.cancel()
            controllerBox.current!.finish(1)
        }
        #expect(isCancelled(result))
        #expect(calls.current == [1, 2])
        #expect(controllerBox.current!.isCancelled)
        #expect(!reports.current.contains(handleBox.current!.id), "a finish after cancel is expected, not a misuse")
    }

    @Test func onCancelAfterCancellationRunsSynchronously() async {
        let controllerBox = Locked<Job<Void>.Controller?>(nil)
        let started = DispatchSemaphore(value: 0)
        _ = await withContinuationOffThePool("the run's handler") { continuation in
            let handle = Job<Void> { controller in
                controllerBox.withLock { $0 = controller }
                started.signal()
            }.perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            _ = wait(for: started)
            handle.cancel()
        }
        let flag = Locked(false)
        controllerBox.current!.onCancel { flag.withLock { $0 = true } }
        #expect(flag.current, "the handler ran before onCancel returned")
    }

    @Test func onCancelHandlersAreDroppedWhenTheRunFinishes() async {
        let called = Locked(false)
        let handleBox = Locked<JobHandle?>(nil)
        _ = await awaitCallback("the run's handler") { continuation in
            let handle = Job<Void> { controller in
                controller.onCancel { called.withLock { $0 = true } }
                controller.finish()
            }.perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            handleBox.withLock { $0 = handle }
        }
        handleBox.current!.cancel()
        #expect(handleBox.current!.state == .finished)
        #expect(!called.current)
    }

    @Test func secondCompletionIsIgnoredAndReportedOnce() async throws {
        let events = Locked<[JobDiagnostics.Event]>([])
        let token = JobDiagnostics.addHandler { event in events.withLock { $0.append(event) } }
        defer { JobDiagnostics.removeHandler(token) }
        let handleBox = Locked<JobHandle?>(nil)
        let gate = DispatchSemaphore(value: 0)
        let bodyReturned = OutcomeBox<Void>()
        let result = await awaitCallback("the run's handler") { continuation in
            let handle = Job<Int> { controller in
                _ = wait(for: gate)
                controller.finish(1)
                controller.fail(with: TestError(id: 2))
                controller.finish(3)
                bodyReturned.set(.success(()))
            }.perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            handleBox.withLock { $0 = handle }
            gate.signal()
        }
        #expect(try #require(result).get() == 1)
        _ = await bodyReturned.result  // the handler may run before the body's later calls
        let mine = events.current.filter { $0.runID == handleBox.current!.id }
        #expect(mine.map(\.kind) == [.completedTwice])
    }

    @Test func cancellingTheProgressCancelsTheRun() async {
        let started = DispatchSemaphore(value: 0)
        let result = await withContinuationOffThePool("the run's handler") { continuation in
            let handle = Job<Void> { _ in started.signal() }
                .perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            _ = wait(for: started)
            handle.progress.cancel()
        }
        #expect(isCancelled(result))
    }

    @Test func wrappingAdaptsOptionalErrorCallbacks() async {
        let ok = await Job<Void>.wrapping { done in DispatchQueue.global().async { done(nil) } }.outcome()
        let bad = await Job<Void>.wrapping { done in done(TestError(id: 1)) }.outcome()
        #expect((try? ok.get()) != nil)
        #expect(bad.failureError as? TestError == TestError(id: 1))
    }

    @Test func wrappingAdaptsResultCallbacks() async throws {
        let job = Job<String>.wrapping { done in done(.success("product")) }
        #expect(try await job.outcome().get() == "product")
    }

    @Test func aJobCanBePerformedManyTimes() async throws {
        let count = Locked(0)
        let job = Job<Int> { controller in
            controller.finish(
                count.withLock {
                    $0 += 1; return $0
                })
        }
        _ = await job.outcome()
        _ = await job.outcome()
        #expect(count.current == 2)
    }
}
