extension Job {
    /// Runs this job again when it fails, up to `attempts` runs in all, waiting as `backoff` says
    /// between them.
    ///
    /// Each attempt is a fresh run of the job. An error for which `when` returns false ends the retries
    /// at once with that error; the last attempt's error is the job's error. An error that is
    /// `RetryAfterProviding` makes the wait at least its `retryAfter`. Cancellation is never retried,
    /// and `when` never sees it: cancelling stops at once, the attempt in flight is cancelled, the
    /// timer of a wait is cancelled, and no further attempt starts. `attempts` below 1 count as 1: the
    /// job runs once. `when` runs on the thread that completed the attempt, with no lock held.
    ///
    /// ```swift
    /// let feed = loadFeed.retry(4, backoff: .exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2))
    /// ```
    public func retry(
        _ attempts: Int,
        backoff: Backoff = .none,
        scheduler: any JobScheduler = .dispatch,
        when shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true }
    ) -> Job<Value> {
        let inner = Nested(self)
        return Job { controller in
            let children = ChildRuns(of: controller)
            let state = LockedBox.make(RetryStateMachine(attempts: attempts))
            @Sendable func attempt(_ number: Int) {
                children.start(inner.value, progress: .whole, attempt: number) { result in
                    var action = state.withLock { $0.attemptCompleted(failed: result.failureToRetry) }
                    if case .askPolicy(let error) = action {
                        var wait = backoff.delay(beforeRetry: state.withLock { $0.attempt })
                        if let suggested = (error as? any RetryAfterProviding)?.retryAfter {
                            wait = max(wait, suggested)
                        }
                        let retry = shouldRetry(error)
                        action = state.withLock { $0.policyAnswered(retry: retry, wait: wait) }
                    }
                    switch action {
                    case .resolve, .askPolicy: controller.resolve(result)
                    case .retryNow: attempt(number + 1)
                    case .retry(let wait): children.schedule(after: wait, on: scheduler) { attempt(number + 1) }
                    }
                }
            }
            attempt(1)
        }
    }
}

extension Result {
    /// The error of a failure that `retry` may retry: any but a cancellation.
    fileprivate var failureToRetry: (any Error)? {
        guard case .failure(let error) = self, (error as? JobError) != .cancelled else { return nil }
        return error
    }
}

/// Where a `retry` is, as a value: which attempt runs, and what to do when one ends.
struct RetryStateMachine {
    enum Action {
        /// Complete the retry's run with the attempt's result.
        case resolve
        /// Ask the caller's predicate and backoff about `error`, then call `policyAnswered`.
        case askPolicy(any Error)
        /// Start the next attempt (`attempt`, one more than the one that ended) now.
        case retryNow
        /// Start the next attempt (`attempt`, one more than the one that ended) after `wait`.
        case retry(after: Duration)
    }

    let attempts: Int
    /// The attempt that runs now, from 1.
    private(set) var attempt = 1

    init(attempts: Int) {
        self.attempts = max(attempts, 1)
    }

    /// The current attempt ended; `failed` is its error when it may be retried (nil on success or
    /// cancellation).
    mutating func attemptCompleted(failed error: (any Error)?) -> Action {
        guard let error, attempt < attempts else { return .resolve }
        return .askPolicy(error)
    }

    /// The predicate said whether to retry, and the backoff how long to wait first.
    mutating func policyAnswered(retry: Bool, wait: Duration) -> Action {
        guard retry else { return .resolve }
        attempt += 1
        return wait <= .zero ? .retryNow : .retry(after: wait)
    }
}
