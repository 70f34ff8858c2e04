extension Job {
    /// Runs this job again when it fails, up to `attempts` runs in all, waiting as `backoff` says
    /// between them.
    ///
    /// Each attempt is a fresh run of the job. An error for which `when` returns false ends the retries
    /// at once with that error; the last attempt's error is the job's error. An error that is
    /// `RetryAfterProviding` makes the wait at least its `retryAfter`. Cancelling stops at once: the
    /// attempt in flight is cancelled and no further attempt starts.
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
        precondition(attempts >= 1, "JobKit: retry needs at least 1 attempt, got \(attempts)")
        return Job { controller in
            let children = ChildRuns(of: controller)
            @Sendable func attempt(_ number: Int) {
                children.start(self, progress: { $0 }) { result in
                    guard case .failure(let error) = result, number < attempts, shouldRetry(error),
                        (error as? JobError) != .cancelled
                    else { return controller.resolve(result) }
                    var wait = backoff.delay(beforeRetry: number)
                    if let suggested = (error as? any RetryAfterProviding)?.retryAfter { wait = max(wait, suggested) }
                    if wait <= .zero {
                        attempt(number + 1)
                    } else {
                        children.schedule(after: wait, on: scheduler) { attempt(number + 1) }
                    }
                }
            }
            attempt(1)
        }
    }
}
