import Foundation
import JobKit

extension DownloadManager {
    /// How transient failures are retried: the parameters of `retryingTransientFailures`.
    public struct RetryPolicy: Sendable, Equatable {
        /// Attempts in all, the first included; 1 never retries.
        public var attempts: Int
        /// The wait before each retry.
        public var backoff: Backoff
        /// A `Retry-After` longer than this fails the item at once (`RetryAfterTooLongError`).
        public var maxRetryAfter: Duration

        /// A policy; the defaults are `retryingTransientFailures`'s: 4 attempts, 200 ms doubling up to
        /// 5 s with 20% jitter, `Retry-After` honoured up to 5 minutes.
        public init(
            attempts: Int = 4,
            backoff: Backoff = .exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2),
            maxRetryAfter: Duration = .seconds(300)
        ) {
            self.attempts = attempts
            self.backoff = backoff
            self.maxRetryAfter = maxRetryAfter
        }

        /// One attempt, no retry.
        public static let none = RetryPolicy(attempts: 1, backoff: .none)
    }
}
