import Dispatch
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitCombine

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

@Suite struct JobHandleStatePublisherTests {
    /// A run whose body waits for the test: `controller` drives it once `started` fired.
    private final class DrivenRun: Sendable {
        let started = Signal("the run's body started")
        private let stored = Locked<Job<Void>.Controller?>(nil)
        let handle: JobHandle

        init(resultQueue: DispatchQueue) {
            let (started, stored) = (started, stored)
            handle = Job<Void> { controller in
                stored.withLock { $0 = controller }
                started.fire()
            }.perform(resultQueue: resultQueue) { _ in }
        }

        var controller: Job<Void>.Controller { stored.current! }
    }

    @Test func statesArriveInOrderOnTheQueueAndFinishAfterTheFinalState() async throws {
        let states = TaggedQueue("test.states", attributes: .concurrent)
        let run = DrivenRun(resultQueue: DispatchQueue(label: "test.results"))
        let recorder = Recorder<JobState, Never>(queue: states)
        run.handle.statePublisher(on: states.queue).subscribe(recorder)
        try await run.started.wait()
        run.controller.report(progress: 0.5)
        run.controller.finish()
        await recorder.wait(for: 2)
        await eventually("the publisher finished") { recorder.received.last.map { $0.isCompletion } == true }
        let values = recorder.values
        #expect(values.last == .finished)
        #expect(
            isOrderedSubsequence(values, of: [.pending, .running(fraction: 0), .running(fraction: 0.5), .finished]))
        #expect(recorder.received.filter(\.isCompletion).count == 1)
        #expect(recorder.received.allSatisfy { $0.wasOnQueue })
    }

    @Test func statesWaitForDemandAndAreSentAsItComes() async throws {
        let states = DispatchQueue(label: "test.states")
        let results = DispatchQueue(label: "test.results")
        let run = DrivenRun(resultQueue: results)
        let recorder = Recorder<JobState, Never>(demand: .none)
        run.handle.statePublisher(on: states).subscribe(recorder)
        try await run.started.wait()
        for step in 1...100 { run.controller.report(progress: Double(step) / 200) }
        run.controller.finish()
        results.sync {}
        await eventually("the run's handler ran") { run.handle.state == .finished }
        states.sync {}
        states.sync {}
        #expect(recorder.received.isEmpty, "nothing is sent without demand")
        recorder.request(.max(1))
        await recorder.wait(for: 1)
        states.sync {}
        #expect(recorder.received.count == 1, "one state for a demand of one")
        recorder.request(.unlimited)
        await eventually("the publisher finished") { recorder.received.last.map { $0.isCompletion } == true }
        let values = recorder.values
        #expect(values.count <= 3, "waiting progress is coalesced: \(values)")
        #expect(values.last == .finished)
    }

    @Test func aSubscriptionAfterTheRunEndedGetsOnlyTheFinalState() async {
        let handle = Job<Void>.failure(TestError(id: 1)).perform(resultQueue: DispatchQueue(label: "r")) { _ in }
        await eventually("the run failed") { handle.state == .failed }
        let recorder = Recorder<JobState, Never>()
        handle.statePublisher(on: DispatchQueue(label: "test.states")).subscribe(recorder)
        await recorder.wait(for: 2)
        #expect(recorder.values == [.failed])
        if case .finished = recorder.received.last {} else { Issue.record("\(recorder.received)") }
    }

    @Test func cancellingTheSubscriptionEndsTheObservationButNotTheRun() async throws {
        let states = DispatchQueue(label: "test.states")
        let run = DrivenRun(resultQueue: DispatchQueue(label: "test.results"))
        weak var released: Recorder<JobState, Never>?
        do {
            let recorder = Recorder<JobState, Never>(demand: .none)
            released = recorder
            run.handle.statePublisher(on: states).subscribe(recorder)
            recorder.cancel()
        }
        try await run.started.wait()
        states.sync {}
        #expect(released == nil, "the subscriber is released")
        #expect(run.handle.state == .running(fraction: 0), "the run goes on")
        run.controller.finish()
        await eventually("the run finished") { run.handle.state == .finished }
    }
}

/// Whether `part` is `whole` with some elements left out, the rest in the same order.
func isOrderedSubsequence<Element: Equatable>(_ part: [Element], of whole: [Element]) -> Bool {
    var remaining = whole[...]
    for element in part {
        guard let index = remaining.firstIndex(of: element) else { return false }
        remaining = remaining[(index + 1)...]
    }
    return true
}
