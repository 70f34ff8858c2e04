import Foundation
import JobKit
import Logging

/// What a `DownloadManager` logs, and at which level: `debug` for a download's start and end,
/// `warning` for a failed attempt that is retried, `error` for a download that failed. Every line
/// carries the item's metadata (`download.id`, `download.name`, `download.url` without a user or
/// password, its signature parameters redacted).
enum DownloadLog {
    /// `logger` with the metadata of the item `start` runs.
    static func logger(_ logger: Logger, for start: DownloadManager.Machine.Start) -> Logger {
        var logger = logger
        logger[metadataKey: "download.id"] = "\(start.id.rawValue)"
        logger[metadataKey: "download.name"] = "\(start.name)"
        logger[metadataKey: "download.url"] = "\(start.url.redactedString)"
        return logger
    }

    /// `job` as one attempt of `retry`: a `Retry-After` longer than the policy's maximum fails at
    /// once (`RetryAfterTooLongError`, as `retryingTransientFailures` does), and a failure that will
    /// be retried — transient (`TransientFailure.isTransient`), before the last attempt — is logged
    /// as a warning.
    static func attempts(of job: Job<URL>, retry: DownloadManager.RetryPolicy, logger: Logger) -> Job<URL> {
        let attempt = LockedBox.make(0)
        return job.mapError { error in
            let error = Job<URL>.limitingRetryAfter(error, to: retry.maxRetryAfter)
            let number = attempt.withLock {
                $0 += 1
                return $0
            }
            if number < retry.attempts, TransientFailure.isTransient(error) {
                logger.warning(
                    "download attempt failed; retrying",
                    metadata: [
                        "download.attempt": "\(number)", "download.attempts": "\(retry.attempts)",
                        "error": "\(describe(error))",
                    ])
            }
            return error
        }
    }

    /// Logs how an item's run ended: `debug` when completed or cancelled, `error` when it failed.
    static func ended(
        _ start: DownloadManager.Machine.Start, _ outcome: DownloadManager.Machine.Outcome, logger: Logger
    ) {
        let logger = Self.logger(logger, for: start)
        switch outcome {
        case .completed: logger.debug("download completed")
        case .cancelled: logger.debug("download cancelled")
        case .failed(let failure):
            logger.error(
                "download failed",
                metadata: ["error": "\(failure.message)", "error.kind": "\(failure.kind.rawValue)"])
        }
    }

    /// An error as one line: its localized description for a `LocalizedError`.
    static func describe(_ error: any Error) -> String {
        (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
    }
}
