import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which network failures are worth retrying.
public enum TransientFailure {
    /// Connection-level errors, and the statuses 408, 429 and 5xx.
    public static func isTransient(_ error: any Error) -> Bool {
        if let status = error as? HTTPStatusError {
            return status.status == 408 || status.status == 429 || (500...599).contains(status.status)
        }
        if let urlError = error as? URLError {
            let transient: [URLError.Code] = [
                .timedOut, .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet,
                .cannotFindHost, .dnsLookupFailed, .badServerResponse, .cannotParseResponse,
            ]
            return transient.contains(urlError.code)
        }
        return false
    }
}

extension Job {
    /// Retries transient network failures (`TransientFailure.isTransient`), honouring `Retry-After`.
    ///
    /// ```swift
    /// let feed = Job<MusicFeed>.decode(for: request).retryingTransientFailures()
    /// ```
    public func retryingTransientFailures(
        attempts: Int = 4,
        backoff: Backoff = .exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2),
        scheduler: any JobScheduler = .dispatch
    ) -> Job<Value> {
        retry(attempts, backoff: backoff, scheduler: scheduler, when: TransientFailure.isTransient)
    }
}
