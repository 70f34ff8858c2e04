import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Which network failures are worth retrying.
public enum TransientFailure {
    /// Connection-level failures — refused, dropped mid-body (FoundationNetworking reports those as
    /// `.unknown` "transfer closed with N bytes remaining", or `.networkConnectionLost`), timed out —
    /// and the statuses 408, 429 and 5xx. A `RetryAfterTooLongError` is not transient.
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
