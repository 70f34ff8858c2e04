import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transfer that failed below HTTP: the connection could not be made, dropped, or timed out.
///
/// Its description names the URL and the reason: `transfer of http://host/big.bin failed: transfer
/// closed with 1000 bytes remaining to read`.
public struct TransportError: Error, LocalizedError, CustomStringConvertible {
    /// What FoundationNetworking reported.
    public let underlying: URLError
    /// The URL of the request that failed, when known.
    public let url: URL?

    init(_ underlying: URLError, url: URL?) {
        self.underlying = underlying
        self.url = url ?? underlying.failingURL
    }

    /// The underlying code: `.timedOut`, `.networkConnectionLost`, `.unknown`, …
    public var code: URLError.Code { underlying.code }

    public var errorDescription: String? {
        let reason = (underlying as NSError).localizedDescription
        return "transfer of \(url?.redactedString ?? "an unknown URL") failed: \(reason) (URLError \(code.rawValue))"
    }

    public var description: String { errorDescription! }
}

extension TransportError {
    /// `error` as one of this module's readable errors: a `URLError` as a `TransportError`.
    static func readable(_ error: any Error, url: URL?) -> any Error {
        if let urlError = error as? URLError { return TransportError(urlError, url: url) }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain {
            return TransportError(
                URLError(URLError.Code(rawValue: nsError.code) ?? .unknown, userInfo: nsError.userInfo), url: url)
        }
        return error
    }
}
