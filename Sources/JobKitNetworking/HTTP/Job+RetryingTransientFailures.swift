import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which network failures are worth retrying.
public enum TransientFailure {
    /// Connection-level failures — refused, dropped mid-body (FoundationNetworking reports those as
    /// `.unknown` "transfer closed with N bytes remaining", or `.networkConnectionLost`), timed out —
    /// and the statuses 408, 429 and 5xx. A `RetryAfterTooLong` is not transient.
    public static func isTransient(_ error: any Error) -> Bool {
        if let status = error as? HTTPStatusError {
            return status.status == 408 || status.status == 429 || (500...599).contains(status.status)
        }
        if let transport = error as? TransportError { return isTransient(transport.underlying) }
        if let urlError = error as? URLError {
            let transient: [URLError.Code] = [
                .timedOut, .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet,
                .cannotFindHost, .dnsLookupFailed, .badServerResponse, .cannotParseResponse,
                .secureConnectionFailed,
            ]
            if transient.contains(urlError.code) { return true }
            // libcurl's "transfer closed with N bytes remaining", "Recv failure", "Empty reply".
            let text = (urlError as NSError).localizedDescription.lowercased()
            return urlError.code == .unknown
                && ["transfer closed", "recv failure", "empty reply", "connection reset", "partial file"]
                    .contains { text.contains($0) }
        }
        return false
    }
}

extension Job {
    /// Retries transient network failures (`TransientFailure.isTransient`), honouring `Retry-After`.
    ///
    /// A `Retry-After` (seconds or an HTTP-date) makes the wait at least that long; one longer than
    /// `maxRetryAfter` (default 5 minutes) fails the job at once with `RetryAfterTooLong`, which
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
        mapError { error in
            guard let status = error as? HTTPStatusError, let requested = status.retryAfter,
                requested > maxRetryAfter
            else { return error }
            return RetryAfterTooLong(requested: requested, maximum: maxRetryAfter, response: status)
        }
        .retry(max(attempts, 1), backoff: backoff, scheduler: scheduler, when: TransientFailure.isTransient)
    }
}
