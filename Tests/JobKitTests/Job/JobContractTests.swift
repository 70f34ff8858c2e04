import Dispatch
import Foundation
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKit

/// The contract slips and argument traps found by probing, each pinned by its cause.
@Suite struct JobContractTests {
    @Test func raceAndFirstSuccessOfNothingFailWithNoJobs() async {
        #expect(await Job<Int>.race([]).outcome().failureError as? JobError == .noJobs)
        #expect(await Job<Int>.firstSuccess([]).outcome().failureError as? JobError == .noJobs)
    }

    @Test(arguments: [0, -5, Int.min])
    func retryWithNoAttemptsRunsTheJobOnce(attempts: Int) async {
        let runs = Locked(0)
        let failing = Job<Int> { controller in
            runs.withLock { $0 += 1 }
            controller.fail(with: TestError(id: 1))
        }
        #expect(await failing.retry(attempts).outcome().failureError as? TestError == TestError(id: 1))
        #expect(runs.current == 1)
    }

    @Test func retryWithIntMaxAttemptsStopsAtTheFirstSuccess() async throws {
        let runs = Locked(0)
        let flaky = Job<Int> { controller in
            let run = runs.withLock {
                $0 += 1; return $0
            }
            if run < 3 { controller.fail(with: TestError(id: run)) } else { controller.finish(run) }
        }
        #expect(try await flaky.retry(.max).outcome().get() == 3)
    }

    @Test func settleProgressReadsExactlyOneWhenAMemberFailedHalfWay() async {
        let members = [
            Job<Int> { controller in
                controller.report(progress: 0.5)
                controller.fail(with: TestError(id: 1))
            },
            .just(2),
        ]
        let (handle, outcome) = Job.settle(members).started()
        let progress = handle.progress
        _ = await outcome.result
        #expect(progress.fractionCompleted == 1.0)
        #expect(handle.state == .finished)
    }

    /// A member cancelled on its own (through its child `Progress`, or by passing on an inner
    /// cancellation) fails the group with `JobError.cancelled`: the group is then `.cancelled`,
    /// never `.failed` with a cancellation error.
    @Test func aMemberCancelledOnItsOwnLeavesTheGroupCancelled() async {
        let member = Job<Void>.failure(JobError.cancelled)
        let (handle, outcome) = Job.group([member, Job { _ in }]).started()
        let result = await outcome.result
        #expect(isCancelled(result))
        #expect(handle.state == .cancelled)
        #expect(handle.error as? JobError == .cancelled)
    }

    @Test func aBodyFailingWithCancelledEndsTheRunCancelled() async {
        let (handle, outcome) = Job<Int>.failure(JobError.cancelled).started()
        #expect(isCancelled(await outcome.result))
        #expect(handle.state == .cancelled)
    }

    @Test func recoverNeverSeesCancellation() async {
        let handlerCalls = Locked(0)
        let started = DispatchSemaphore(value: 0)
        let slow = Job<Int> { _ in started.signal() }
        let (handle, outcome) = slow.recover { _ in
            handlerCalls.withLock { $0 += 1 }
            return .just(0)
        }.started()
        _ = await started.waitOffThePool("the body started")
        handle.cancel()
        #expect(isCancelled(await outcome.result))
        #expect(handlerCalls.current == 0)
    }

    @Test func retryAndMapErrorNeverSeeCancellation() async {
        let seen = Locked<[String]>([])
        let started = DispatchSemaphore(value: 0)
        let slow = Job<Int> { _ in started.signal() }
        let (handle, outcome) = slow.retry(5) { _ in
            seen.withLock { $0.append("retry") }
            return true
        }.mapError { error in
            seen.withLock { $0.append("mapError") }
            return error
        }.started()
        _ = await started.waitOffThePool("the body started")
        handle.cancel()
        #expect(isCancelled(await outcome.result))
        #expect(seen.current.isEmpty)
    }

    /// The race's losers are cancelled before the race completes: by the time `value` returns,
    /// every started loser's `onCancel` has run — every time.
    @Test func raceLosersAreCancelledBeforeTheOutcomeIsDelivered() async throws {
        for iteration in 0..<3_000 {
            let cancelled = Locked(0)
            let losersStarted = DispatchSemaphore(value: 0)
            let loser = Job<Int> { controller in
                controller.onCancel { cancelled.withLock { $0 += 1 } }
                losersStarted.signal()
            }
            let winner = Job<Int> { controller in
                _ = wait(for: losersStarted)
                _ = wait(for: losersStarted)
                controller.finish(iteration)
            }
            let value = try await Job.race([loser, winner, loser]).value
            #expect(value == iteration)
            #expect(cancelled.current == 2, "iteration \(iteration)")
            if cancelled.current != 2 { break }
        }
    }

    @Test func aTimedOutAttemptIsCancelledBeforeTheTimeoutIsDelivered() async {
        for iteration in 0..<3_000 {
            let scheduler = TestScheduler()
            let cancelled = Locked(false)
            let started = DispatchSemaphore(value: 0)
            let stuck = Job<Int> { controller in
                controller.onCancel { cancelled.withLock { $0 = true } }
                started.signal()
            }
            let waiter = Task { () -> Result<Int, any Error> in
                do { return .success(try await stuck.timeout(.seconds(30), scheduler: scheduler).value) } catch {
                    return .failure(error)
                }
            }
            await scheduler.waitUntilScheduled()
            _ = await started.waitOffThePool("the body started")
            scheduler.advance(by: .seconds(30))
            #expect(await waiter.value.failureError as? JobError == .timedOut)
            #expect(cancelled.current, "iteration \(iteration)")
            if !cancelled.current { break }
        }
    }

    @Test func stopAllCancelsNodesClaimedButNotYetStarted() async throws {
        // A serial queue that is busy: the nodes are claimed, but their bodies wait behind the failure.
        let queue = DispatchQueue(label: "graph")
        let gate = DispatchSemaphore(value: 0)
        let started = Locked<[String]>([])
        var graph = JobGraph<String>()
        try graph.add(
            "fails",
            Job { controller in
                _ = wait(for: gate)
                controller.fail(with: TestError(id: 1))
            })
        for name in ["a", "b", "c"] {
            try graph.add(
                name,
                Job { controller in
                    started.withLock { $0.append(name) }
                    controller.finish()
                })
        }
        let job = try graph.job(maxConcurrent: 4, policy: .stopAll)
        let outcome = OutcomeBox<[String: JobGraph<String>.Outcome]>()
        job.perform(on: queue, resultQueue: resultQueue) { outcome.set($0) }
        gate.signal()
        let outcomes = try await outcome.result.get()
        #expect(started.current.isEmpty, "no node starts after the graph stopped: \(started.current)")
        #expect(outcomes.count == 4)
        for name in ["a", "b", "c"] {
            let outcome = outcomes[name].map { "\($0)" }
            #expect(outcome == "cancelled" || outcome == "skipped", "\(name): \(outcome ?? "none")")
        }
    }

    /// The observer is as slow as can be: its first delivery blocks until the run has reported
    /// 100,000 times and finished. Everything in between is coalesced into one progress delivery.
    @Test func aSlowObserverGetsAFewCoalescedDeliveriesEndingAtOne() async {
        let reports = 100_000
        let gate = DispatchSemaphore(value: 0)
        let reportsDone = DispatchSemaphore(value: 0)
        let job = Job<Void> { controller in
            _ = wait(for: gate)
            for step in 1...reports { controller.report(progress: Double(step) / Double(reports)) }
            controller.finish()
            reportsDone.signal()
        }
        let (handle, outcome) = job.started()
        let deliveries = Locked<[JobState]>([])
        let finished = OutcomeBox<Void>()
        handle.onStateChange(on: DispatchQueue(label: "slow observer")) { state in
            if deliveries.withLock({
                $0.append(state); return $0.count
            }) == 1 {
                _ = wait(for: reportsDone)
            }
            if state.isFinal { finished.set(.success(())) }
        }
        gate.signal()
        _ = await outcome.result
        _ = await finished.result
        let states = deliveries.current
        #expect(states.count <= 4, "\(states)")
        #expect(states.suffix(2) == [.running(fraction: 1), .finished])
    }

    @Test func cancellingAnObservationStopsItsDeliveries() async {
        let gate = DispatchSemaphore(value: 0)
        let (handle, outcome) = Job<Void> { controller in
            _ = wait(for: gate)
            controller.report(progress: 0.5)
            controller.finish()
        }.started()
        let seen = Locked<[JobState]>([])
        let observerQueue = DispatchQueue(label: "observer")
        let observation = handle.onStateChange(on: observerQueue) { state in seen.withLock { $0.append(state) } }
        observerQueue.sync {}
        observation.cancel()
        observation.cancel()  // twice is fine
        let before = seen.current
        gate.signal()
        _ = await outcome.result
        observerQueue.sync {}
        #expect(seen.current == before)
        #expect(!before.contains { $0.isFinal })
    }

    @Test func setDelegateReplacesThePreviousDelegate() async {
        let gate = DispatchSemaphore(value: 0)
        let (handle, outcome) = Job<Void> { controller in
            _ = wait(for: gate)
            controller.fail(with: TestError(id: 7))
        }.started()
        let first = RecordingDelegate()
        let second = ErrorReadingDelegate()
        let delegateQueue = DispatchQueue(label: "delegates")
        handle.setDelegate(first, on: delegateQueue)
        handle.setDelegate(second, on: delegateQueue)
        delegateQueue.sync {}
        let firstCalls = first.calls.current
        gate.signal()
        _ = await outcome.result
        let error = await second.completion.result
        delegateQueue.sync {}
        #expect(first.calls.current == firstCalls, "the replaced delegate is not called again")
        #expect(!firstCalls.contains { $0.hasPrefix("complete") })
        #expect((try? error.get()) as? TestError == TestError(id: 7), "the delegate reads why the run failed")
    }

    @Test func theHandleExposesTheFinalError() async {
        let failed = Job<Int>.failure(TestError(id: 3)).started()
        _ = await failed.outcome.result
        #expect(failed.handle.error as? TestError == TestError(id: 3))

        let finished = Job<Int>.just(1).started()
        _ = await finished.outcome.result
        #expect(finished.handle.error == nil)

        let cancelled = Job<Int> { _ in }.started()
        cancelled.handle.cancel()
        _ = await cancelled.outcome.result
        #expect(cancelled.handle.error as? JobError == .cancelled)
    }

    @Test func theTraceLogIsBounded() {
        var log = TraceLog(maximumRuns: 3)
        for run in UInt64(1)...10 {
            for kind in [JobTraceEvent.Kind.enqueued, .started, .progress(0.5), .finished] {
                log.append(JobTraceEvent(runID: run, parentID: nil, name: nil, kind: kind, time: run))
            }
        }
        #expect(log.spans().map(\.runID) == [1, 2, 3])
        #expect(log.droppedRuns == 7)
        let writer = ChromeTraceWriter(maximumRuns: 1)
        Job.group([.empty, .empty]).traced(by: writer).perform(resultQueue: resultQueue) { _ in }
        resultQueue.sync {}
    }

    @Test func jobErrorsDescribeThemselves() {
        #expect(JobError.noJobs.localizedDescription.contains("no jobs"))
        #expect(
            JobError.invalidArgument("maxConcurrent must be at least 1, got 0").localizedDescription
                == "invalid argument: maxConcurrent must be at least 1, got 0")
    }
}

/// A delegate that reads `handle.error` when told the run completed.
final class ErrorReadingDelegate: SendableJobDelegate {
    let completion = OutcomeBox<(any Error)?>()

    func job(_ handle: JobHandle, didCompleteWith state: JobState) {
        completion.set(.success(handle.error))
    }
}
