import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job {
    /// Retries transient network failures (`TransientFailure.isTransient`), honouring `Retry-After`.
    ///
    /// A `Retry-After` (seconds or an HTTP-date) makes the wait at least that long; one longer than
    /// `maxRetryAfter` (default 5 minutes) fails the job at once with `RetryAfterTooLongError`, which
    /// carries the requested delay. Waits are scheduled on `scheduler`; the run completes where the
    /// last attempt completed (the queue the job was performed on, for this module's jobs).
    ///
    /// ```swift
    /// let feed = Job<MusicFeed>.decode(for: request).retryingTransientFailures()
    /// ```
    public func retryingTransientFailures(
        attempts: Int = 4,
        backoff: Backoff = .exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2),
        maxRetryAfter: Duration = .seconds(300),
        scheduler: any JobScheduler = .dispatch
    ) -> Job<Value> {
        mapError { error in Self.limitingRetryAfter(error, to: maxRetryAfter) }
            .retry(max(attempts, 1), backoff: backoff, scheduler: scheduler, when: TransientFailure.isTransient)
    }

    /// `error`, or a `RetryAfterTooLongError` when it is a status whose `Retry-After` is longer than
    /// `maxRetryAfter` (it is then not transient: not retried).
    static func limitingRetryAfter(_ error: any Error, to maxRetryAfter: Duration) -> any Error {
        guard let status = error as? HTTPStatusError, let requested = status.retryAfter, requested > maxRetryAfter
        else { return error }
        return RetryAfterTooLongError(requested: requested, maximum: maxRetryAfter, response: status)
    }
}
