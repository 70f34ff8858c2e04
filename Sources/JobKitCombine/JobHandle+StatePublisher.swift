import Dispatch
import JobKit

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

extension JobHandle {
    /// The run's states as a publisher: the states `onStateChange(on:_:)` delivers, in the same
    /// order, sent on `queue`; it finishes after the final state.
    ///
    /// Each subscription observes the run from the moment it subscribes: it first gets the state at
    /// that time (only the final state, once the run has ended), then every change. Demand is
    /// honoured: while the subscriber asks for nothing, states wait — at most three, as progress is
    /// coalesced (a newer fraction replaces a waiting one; `pending` and the final state are never
    /// dropped). Cancelling the subscription ends the observation and releases the subscriber; it does
    /// not cancel the run.
    ///
    /// ```swift
    /// handle.statePublisher()                               // on the main queue
    ///     .sink { state in row.show(state) }
    ///     .store(in: &subscriptions)
    /// ```
    ///
    /// A `sink` written in a main-actor screen is the screen's own closure, which Swift 6 checks at run
    /// time is called on the main actor: with the default `queue` the states are sent on the main
    /// queue, so the check holds.
    ///
    /// - Parameter queue: where the states and the completion are sent; calls never overlap, even on a
    ///   concurrent queue. Defaults to the main queue (the main actor's executor).
    public func statePublisher(on queue: DispatchQueue = .main) -> AnyPublisher<JobState, Never> {
        StatePublisher(handle: self, queue: queue).eraseToAnyPublisher()
    }
}

/// Observes a run for each subscriber: see `JobHandle.statePublisher(on:)`.
struct StatePublisher: Publisher {
    typealias Output = JobState
    typealias Failure = Never

    let handle: JobHandle
    let queue: DispatchQueue

    func receive<Downstream: Subscriber>(subscriber: Downstream)
    where Downstream.Input == JobState, Downstream.Failure == Never {
        let subscription = StateSubscription(downstream: AnySubscriber(subscriber), queue: queue)
        subscriber.receive(subscription: subscription)
        subscription.observe(handle)
    }
}
