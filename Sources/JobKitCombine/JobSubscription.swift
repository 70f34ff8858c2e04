import Dispatch
import JobKit

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

/// One subscription to `Job.publisher(on:resultQueue:)`: one run of the job, started at the first
/// demand, its outcome sent on the result queue.
///
/// The state is a `JobSubscriptionStateMachine` behind a lock: each call decides under the lock and
/// acts — performs, cancels, calls the subscriber — after releasing it.
///
/// The subscriber is kept type-erased (`AnySubscriber`): a subscription generic over its subscriber's
/// type could not hand itself to the run's `@Sendable` completion.
// Safety: the only mutable state is `state`, reached only through its lock. The subscriber is called
// only by `deliver`, once, on the result queue: Combine's rule that calls to a subscriber never
// overlap holds.
final class JobSubscription<Value: Sendable>: Subscription, @unchecked Sendable {
    typealias Downstream = AnySubscriber<Value, any Error>

    private let state: LockedBox<JobSubscriptionStateMachine<Downstream, Value>>
    private let queue: DispatchQueue
    private let resultQueue: DispatchQueue

    init(downstream: Downstream, job: Job<Value>, queue: DispatchQueue, resultQueue: DispatchQueue) {
        self.state = LockedBox.make(JobSubscriptionStateMachine(downstream: downstream, job: job))
        self.queue = queue
        self.resultQueue = resultQueue
    }

    func request(_ demand: Subscribers.Demand) {
        guard let job = state.withLock({ $0.request(hasDemand: demand > 0) }) else { return }
        let handle = job.perform(on: queue, resultQueue: resultQueue) { [self] result in deliver(result) }
        state.withLock { $0.started(handle) }?.cancel()
    }

    func cancel() {
        switch state.withLock({ $0.cancel() }) {
        case .release(let downstream, let job): withExtendedLifetime((downstream, job)) {}
        case .cancel(let handle, let downstream): withExtendedLifetime(downstream) { handle?.cancel() }
        case .none: break
        }
    }

    /// Sends the run's outcome, on the result queue, unless the subscription was cancelled first.
    private func deliver(_ result: Result<Value, any Error>) {
        guard let downstream = state.withLock({ $0.completed() }) else { return }
        switch result {
        case .success(let value):
            // A single-value publisher: whatever more the subscriber asks for, nothing more comes.
            _ = downstream.receive(value)
            downstream.receive(completion: .finished)
        case .failure(let error):
            downstream.receive(completion: .failure(error))
        }
    }
}
