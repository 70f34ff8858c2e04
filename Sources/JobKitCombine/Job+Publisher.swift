import Dispatch
import JobKit

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

extension Job {
    /// A publisher that performs this job once for each subscription, and publishes its value.
    ///
    /// The publisher is deferred: nothing runs until a subscriber asks for a value. Each subscription
    /// starts its own run of the job when it first requests a value (a demand above zero), then sends
    /// that run's value followed by `.finished`, or its error as `.failure`, on `resultQueue`: the hop
    /// to the main queue that a UI needs is done by the publisher, not left to each subscriber.
    /// Cancelling the subscription cancels the run (its `onCancel` handlers run) and sends nothing
    /// more; a cancelled run's `JobError.cancelled` never reaches the subscriber.
    ///
    /// ```swift
    /// @MainActor final class FeedScreen {
    ///     private(set) var feed: [Music] = []
    ///     private var subscriptions = Set<AnyCancellable>()
    ///     func show() {
    ///         loadFeed.publisher()                          // value and completion on the main queue
    ///             .sink { completion in print(completion) } receiveValue: { feed in self.feed = feed }
    ///             .store(in: &subscriptions)
    ///     }
    /// }
    /// ```
    ///
    /// A `sink` written in a main-actor screen, as above, is the screen's own closure, which Swift 6
    /// checks at run time is called on the main actor: with the default `resultQueue` the publisher
    /// calls it on the main queue, so the check holds. Name another `resultQueue` only for subscribers
    /// that are not main-actor isolated.
    ///
    /// The subscription keeps its subscriber until the run has delivered its outcome or the
    /// subscription is cancelled, whichever comes first, and then releases it; the run keeps the
    /// subscription until it completes.
    ///
    /// - Parameters:
    ///   - queue: where the job's body runs, as in `perform(on:resultQueue:then:)`.
    ///   - resultQueue: where the value and the completion are sent. Defaults to the main queue (the
    ///     main actor's executor).
    /// - Returns: the job's value, then `.finished`; or `.failure` with the run's error.
    public func publisher(
        on queue: DispatchQueue = .global(), resultQueue: DispatchQueue = .main
    ) -> AnyPublisher<Value, any Error> {
        JobPublisher(job: self, queue: queue, resultQueue: resultQueue).eraseToAnyPublisher()
    }
}

/// Performs a job for each subscriber: see `Job.publisher(on:resultQueue:)`.
struct JobPublisher<Output: Sendable>: Publisher {
    typealias Failure = any Error

    let job: Job<Output>
    let queue: DispatchQueue
    let resultQueue: DispatchQueue

    func receive<Downstream: Subscriber>(subscriber: Downstream)
    where Downstream.Input == Output, Downstream.Failure == any Error {
        let subscription = JobSubscription(
            downstream: AnySubscriber(subscriber), job: job, queue: queue, resultQueue: resultQueue)
        subscriber.receive(subscription: subscription)
    }
}
