import Dispatch
import JobKit

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

/// One subscription to `JobHandle.statePublisher(on:)`: an `onStateChange` observation whose states
/// wait for the subscriber's demand.
///
/// The state is a `StateSubscriptionStateMachine` behind a lock: each call decides under the lock and
/// acts — sends, ends the observation — after releasing it.
///
/// The subscriber is kept type-erased (`AnySubscriber`): a subscription generic over its subscriber's
/// type could not hand itself to the observation's `@Sendable` handler.
// Safety: the only mutable state is `state`, reached only through its lock. The subscriber is called
// only by `drain`, on `queue`, and the state machine lets one drain run at a time: Combine's rule
// that calls to a subscriber never overlap holds.
final class StateSubscription: Subscription, @unchecked Sendable {
    typealias Downstream = AnySubscriber<JobState, Never>

    private let state: LockedBox<StateSubscriptionStateMachine<Downstream, JobObservation>>
    private let queue: DispatchQueue

    init(downstream: Downstream, queue: DispatchQueue) {
        self.state = LockedBox.make(StateSubscriptionStateMachine(downstream: downstream))
        self.queue = queue
    }

    /// Starts observing `handle`; call it once, after the subscriber received the subscription.
    func observe(_ handle: JobHandle) {
        let observation = handle.onStateChange(on: queue) { [self] state in
            if self.state.withLock({ $0.received(state) }) { drain() }
        }
        state.withLock { $0.observing(observation) }?.cancel()
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        if state.withLock({ $0.requested(demand.max) }) {
            queue.async { [self] in drain() }
        }
    }

    func cancel() {
        guard let (downstream, observation) = state.withLock({ $0.cancel() }) else { return }
        observation?.cancel()
        withExtendedLifetime(downstream) {}
    }

    /// Sends waiting states while there is demand; runs on `queue`, one drain at a time.
    private func drain() {
        while true {
            switch state.withLock({ $0.next() }) {
            case .send(let jobState, let downstream):
                let more = downstream.receive(jobState)
                state.withLock { $0.sent(addingDemand: more.max) }
            case .finish(let jobState, let downstream, let observation):
                observation?.cancel()
                _ = downstream.receive(jobState)
                downstream.receive(completion: .finished)
                return
            case .stop:
                return
            }
        }
    }
}
