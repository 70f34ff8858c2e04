import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct JobHandleObservationTests {
    /// A job that reports 0.25, 0.5, 0.75 and then finishes, once released.
    private func steppedJob(gate: DispatchSemaphore) -> Job<Void> {
        Job { controller in
            _ = wait(for: gate)
            for fraction in [0.25, 0.5, 0.75] { controller.report(progress: fraction) }
            controller.finish()
        }
    }

    @Test func allThreeFormsSeeTheSameStatesInTheSameOrder() async throws {
        let gate = DispatchSemaphore(value: 0)
        let handle = steppedJob(gate: gate).perform(resultQueue: resultQueue) { _ in }
        let closureStates = Locked<[JobState]>([])
        let closureDone = Locked<Resumer<Void>?>(nil)
        handle.onStateChange(on: DispatchQueue(label: "c", attributes: .concurrent)) { state in
            closureStates.withLock { $0.append(state) }
            if state.isFinal { closureDone.withLock { $0?.resume() } }
        }
        let delegate = RecordingDelegate()
        handle.setDelegate(delegate, on: DispatchQueue(label: "d"))
        let stream = handle.states
        gate.signal()
        var streamed: [JobState] = []
        for await state in stream { streamed.append(state) }
        await awaitCallback("the run's handler") { continuation in
            closureDone.withLock { $0 = continuation }
            if closureStates.current.last?.isFinal == true {
                closureDone.withLock {
                    $0?.resume(); $0 = nil
                }
            }
        }
        let expected: [JobState] = [
            .running(fraction: 0), .running(fraction: 0.25), .running(fraction: 0.5),
            .running(fraction: 0.75), .finished,
        ]
        // Each form starts with the state at registration, which may still be pending; progress is
        // coalesced, so each sees an ordered part of the states that always ends 75%, finished.
        for states in [streamed, closureStates.current] {
            let seen = Array(states.drop { $0 == .pending })
            #expect(isOrderedSubsequence(seen, of: expected), "\(seen)")
            #expect(seen.suffix(2) == [.running(fraction: 0.75), .finished], "\(seen)")
        }
        await delegate.waitForCompletion()
        #expect(delegate.calls.current.suffix(2) == ["state finished", "complete finished"])
        let progress = delegate.calls.current.filter { $0.hasPrefix("progress") }
        #expect(progress.last == "progress 0.75")
        #expect(isOrderedSubsequence(progress, of: ["progress 0.0", "progress 0.25", "progress 0.5", "progress 0.75"]))
    }

    @Test func aLateObserverGetsTheFinalStateOnce() async {
        let handleBox = Locked<JobHandle?>(nil)
        _ = await awaitCallback("the run's handler") { continuation in
            handleBox.withLock {
                $0 = Job<Int>.just(1).perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
            }
        }
        let handle = handleBox.current!
        var streamed: [JobState] = []
        for await state in handle.states { streamed.append(state) }
        #expect(streamed == [.finished])
        let seen = await awaitCallback("the run's handler") { continuation in
            handle.onStateChange(on: resultQueue) { continuation.resume(returning: $0) }
        }
        #expect(seen == .finished)
    }

    @Test func aDelegateDeallocatedMidRunIsNotRetainedAndNotCalled() async {
        let gate = DispatchSemaphore(value: 0)
        let calls = Locked<[String]>([])
        weak var weakDelegate: RecordingDelegate?
        let result = await awaitCallback("the run's handler") { continuation in
            let handle = steppedJob(gate: gate).perform(resultQueue: resultQueue) {
                continuation.resume(returning: $0)
            }
            do {
                let delegate = RecordingDelegate(sharing: calls)
                weakDelegate = delegate
                handle.setDelegate(delegate, on: resultQueue)
            }
            // Let the delegate's first delivery run, then drop the last strong reference.
            resultQueue.sync {}
            gate.signal()
        }
        #expect((try? result?.get()) != nil)
        resultQueue.sync {}
        #expect(weakDelegate == nil, "JobKit must not retain the delegate")
        #expect(!calls.current.contains { $0.hasPrefix("complete") }, "a gone delegate must not be called")
    }

    @Test func statesStreamEndsEarlyWithoutLeakingTheObserver() async {
        let gate = DispatchSemaphore(value: 0)
        let handle = steppedJob(gate: gate).perform(resultQueue: resultQueue) { _ in }
        for await state in handle.states {
            #expect(!state.isFinal)
            break
        }
        gate.signal()
        for await _ in handle.states {}
        #expect(handle.state == .finished)
    }
}

/// Records every delegate call as text.
final class RecordingDelegate: SendableJobDelegate {
    let calls: Locked<[String]>
    private let completed = Locked<(done: Bool, waiter: Resumer<Void>?)>((false, nil))

    init(sharing calls: Locked<[String]> = Locked([])) {
        self.calls = calls
    }

    func job(_ handle: JobHandle, didChangeState state: JobState) {
        calls.withLock { $0.append("state \(state)") }
    }

    func job(_ handle: JobHandle, didReportProgress fraction: Double) {
        calls.withLock { $0.append("progress \(fraction)") }
    }

    func job(_ handle: JobHandle, didCompleteWith state: JobState) {
        calls.withLock { $0.append("complete \(state)") }
        completed.withLock {
            $0.done = true; $0.waiter?.resume(); $0.waiter = nil
        }
    }

    func waitForCompletion() async {
        await awaitCallback("the run's handler") { continuation in
            completed.withLock { state in
                if state.done { continuation.resume() } else { state.waiter = continuation }
            }
        }
    }
}
