import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response whose status is not 2xx.
///
/// Its description names the status and the URL: `HTTP 404 Not Found for http://host/feed`.
public struct HTTPStatusError: Error, RetryAfterProviding, LocalizedError, CustomStringConvertible {
    /// The most bytes of an error body kept in `bodyExcerpt`.
    public static let excerptLimit = 512

    /// The HTTP status code that is not 2xx.
    public let status: Int
    /// Header names in lower case.
    public let headers: [String: String]
    /// The start of the body, at most `excerptLimit` bytes, as text.
    public let bodyExcerpt: String
    /// The URL that answered, when known.
    public let url: URL?
    /// How long the server asked to wait (`Retry-After`, as seconds or as an HTTP-date, measured from
    /// the response's `Date` when it has one), as the server sent it: no cap applies here
    /// (`retryingTransientFailures(maxRetryAfter:)` sets one). Nil without a readable `Retry-After`.
    public let retryAfter: Duration?

    init(_ response: HTTPReply, now: Date = Date()) {
        status = response.status
        headers = response.headers
        bodyExcerpt = String(decoding: response.body.prefix(Self.excerptLimit), as: UTF8.self)
        url = response.url
        retryAfter = headers["retry-after"].flatMap {
            RetryAfter.delay($0, responseDate: response.headers["date"], now: now)
        }
    }

    /// `HTTP 404 Not Found for http://host/feed`.
    public var errorDescription: String? {
        "HTTP \(status) \(HTTPStatusError.reason(status)) for \(url?.redactedString ?? "an unknown URL")"
    }

    public var description: String {
        errorDescription! + (bodyExcerpt.isEmpty ? "" : ": \(bodyExcerpt.prefix(120))")
    }

    /// The standard reason phrase of `status`.
    static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 416: "Range Not Satisfiable"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: HTTPURLResponse.localizedString(forStatusCode: status).capitalized
        }
    }
}
