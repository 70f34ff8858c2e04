import JobKit
import Testing

@testable import JobKitCombine

@Suite struct StateSubscriptionStateMachineTests {
    @Test func waitingStatesStayBounded() {
        var machine = StateSubscriptionStateMachine<Int, Int>(downstream: 1)
        let observation = machine.observing(7)
        #expect(observation == nil)
        _ = machine.received(.pending)
        for step in 0...1000 { _ = machine.received(.running(fraction: Double(step) / 1000)) }
        _ = machine.received(.finished)
        #expect(machine.waitingStates == [.pending, .running(fraction: 1), .finished])
        let drains = machine.requested(nil)
        #expect(drains)
        guard case .send(.pending, to: 1) = machine.next() else {
            Issue.record("expected pending first")
            return
        }
        machine.sent(addingDemand: 0)
        guard case .send(.running(fraction: 1), to: 1) = machine.next() else {
            Issue.record("expected the newest progress")
            return
        }
        guard case .finish(.finished, to: 1, ending: .some(7)) = machine.next() else {
            Issue.record("expected the final state, ending the observation")
            return
        }
        let drainsAgain = machine.requested(nil)
        #expect(!drainsAgain, "nothing more after the final state")
    }

    @Test func aCancelledSubscriptionEndsAnObservationThatArrivesLate() {
        var machine = StateSubscriptionStateMachine<Int, Int>(downstream: 1)
        guard let (downstream, observation) = machine.cancel() else {
            Issue.record("expected the subscriber back")
            return
        }
        #expect(downstream == 1 && observation == nil)
        let late = machine.observing(7)
        #expect(late == 7, "the observation is handed back, to be ended")
        let drains = machine.received(.pending)
        #expect(!drains)
        let again = machine.cancel()
        #expect(again == nil)
    }
}
