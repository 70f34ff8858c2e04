import Dispatch
import JobKit
import Testing

@testable import JobKitCombine

@Suite struct JobSubscriptionStateMachineTests {
    private let handle = Job<Int>.just(1).perform(resultQueue: DispatchQueue(label: "test.results")) { _ in }

    @Test func theRunStartsAtTheFirstDemandAboveZeroOnly() {
        var machine = JobSubscriptionStateMachine(downstream: "subscriber", job: Job.just(1))
        let withoutDemand = machine.request(hasDemand: false)
        #expect(withoutDemand == nil)
        let first = machine.request(hasDemand: true)
        #expect(first != nil)
        let second = machine.request(hasDemand: true)
        #expect(second == nil, "one run per subscription")
        let toCancel = machine.started(handle)
        #expect(toCancel == nil)
        let downstream = machine.completed()
        #expect(downstream == "subscriber")
        let again = machine.completed()
        #expect(again == nil, "the outcome is handed out once")
    }

    @Test func aCancellationWhileTheRunStartsCancelsItOnceItsHandleIsKnown() {
        var machine = JobSubscriptionStateMachine(downstream: "subscriber", job: Job.just(1))
        _ = machine.request(hasDemand: true)
        guard case .cancel(nil, releasing: "subscriber") = machine.cancel() else {
            Issue.record("expected the subscriber released, with no handle yet")
            return
        }
        let toCancel = machine.started(handle)
        #expect(toCancel === handle, "the handle comes back, to be cancelled")
        let downstream = machine.completed()
        #expect(downstream == nil, "nothing is sent after a cancellation")
    }

    @Test func aCancellationBeforeAnyDemandReleasesTheSubscriberAndTheJob() {
        var machine = JobSubscriptionStateMachine(downstream: "subscriber", job: Job.just(1))
        guard case .release("subscriber", _) = machine.cancel() else {
            Issue.record("expected the subscriber and the job released")
            return
        }
        let job = machine.request(hasDemand: true)
        #expect(job == nil, "no run after a cancellation")
        guard case .none = machine.cancel() else {
            Issue.record("a second cancel does nothing")
            return
        }
    }
}
