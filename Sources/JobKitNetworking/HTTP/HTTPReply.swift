import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A complete HTTP response: status, headers and body. (Named so as not to clash with
/// swift-http-types' `HTTPResponse`.)
public struct HTTPReply: Sendable {
    /// The HTTP status code, 100…599.
    public let status: Int
    /// Header names in lower case.
    public let headers: [String: String]
    /// The whole body (empty for a body-less answer).
    public let body: Data
    /// The URL that answered, after redirects.
    public let url: URL?

    init(_ response: HTTPURLResponse, body: Data) {
        status = response.statusCode
        headers = response.lowercasedHeaders
        self.body = body
        url = response.url
    }
}

extension HTTPURLResponse {
    /// The header fields, names in lower case.
    var lowercasedHeaders: [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return headers
    }
}

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

/// `Retry-After` parsing.
enum RetryAfter {
    /// The longest delay a `Retry-After` is read as: more digits than an `Int64` holds mean "not
    /// soon", never an overflow.
    static let longest: Duration = .seconds(Int64.max)

    /// `value` read as delay-seconds or as an HTTP-date (relative to `responseDate`, else `now`).
    static func delay(_ value: String, responseDate: String?, now: Date) -> Duration? {
        let value = value.trimmingCharacters(in: .whitespaces)
        if !value.isEmpty, value.count < 1000, value.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return Int64(value).map { .seconds($0) } ?? longest
        }
        guard value.count < 100, let date = httpDate(value) else { return nil }
        let reference = responseDate.flatMap(httpDate) ?? now
        let seconds = date.timeIntervalSince(reference)
        guard seconds.isFinite else { return nil }
        if seconds <= 0 { return .zero }
        return seconds >= 9e15 ? longest : .milliseconds(Int64(seconds * 1000))
    }

    /// An HTTP-date (RFC 9110: IMF-fixdate, and the obsolete RFC 850 and asctime forms).
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}

/// A body that did not decode; `path` names the field that failed, like `feed.results[2].name`.
public struct DecodingFailure: Error, LocalizedError, CustomStringConvertible {
    /// The name of the type that was being decoded.
    public let type: String
    /// Where decoding failed, as a path from the root: `feed.results[2].name`.
    public let path: String
    /// Why, in words: a missing key, a type mismatch, corrupt data.
    public let reason: String

    init(_ error: any Error, decoding type: Any.Type) {
        self.type = String(describing: type)
        let (context, kind): (DecodingError.Context?, String) =
            switch error as? DecodingError {
            case .keyNotFound(let key, let context)?: (context, "missing key \(key.stringValue)")
            case .typeMismatch(_, let context)?: (context, "type mismatch")
            case .valueNotFound(_, let context)?: (context, "missing value")
            case .dataCorrupted(let context)?: (context, "data corrupted")
            default: (nil, "\(error)")
            }
        var codingPath = context?.codingPath ?? []
        if case .keyNotFound(let key, _)? = error as? DecodingError { codingPath.append(key) }
        path = codingPath.reduce(into: "") { path, key in
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += (path.isEmpty ? "" : ".") + key.stringValue
            }
        }
        reason = [kind, context?.debugDescription].compactMap { $0 }.joined(separator: ": ")
    }

    public var errorDescription: String? { description }

    public var description: String {
        "could not decode \(type) at \(path.isEmpty ? "the top level" : path): \(reason)"
    }
}

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

/// A file operation of a download that failed, with the path and the system's reason.
///
/// `cannot write /tmp/out/file.part: No such file or directory`.
public struct DownloadError: Error, LocalizedError, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The destination is an existing directory; it is left as it was.
        case destinationIsDirectory
        /// The folder of the destination does not exist.
        case folderMissing
        /// The folder of the destination exists but cannot be written.
        case folderNotWritable
        /// Another download to the same destination is running, in this process or another.
        case destinationBusy
        /// A file is under the destination's name, or a file or folder appeared there while the
        /// download ran: it is left exactly as it is (a complete `.part` is kept beside it).
        case destinationExists
        /// A file could not be created, written, synced or renamed; `errno` says why.
        case cannotWrite(errno: Int32)
        /// The server's answer did not add up: a `Content-Range` that does not continue the `.part`,
        /// or fewer bytes than it announced.
        case inconsistentResponse(String)
    }

    /// What went wrong.
    public let kind: Kind
    /// The path involved: the destination, its folder, or the `.part`.
    public let path: String

    public var errorDescription: String? {
        switch kind {
        case .destinationIsDirectory: "cannot download to \(path): it is a directory"
        case .folderMissing: "cannot download into \(path): no such folder"
        case .folderNotWritable: "cannot download into \(path): the folder is not writable"
        case .destinationBusy: "cannot download to \(path): another download to it is running"
        case .destinationExists:
            "cannot download to \(path): a file or folder is under its name (it was there, or appeared while the "
                + "download ran); it is left as it is"
        case .cannotWrite(let code): "cannot write \(path): \(String(cString: strerror(code)))"
        case .inconsistentResponse(let reason): "download to \(path) failed: \(reason)"
        }
    }

    public var description: String { errorDescription! }
}

/// A server asked to wait longer than the retry policy's maximum before trying again: the job fails
/// instead of waiting. `requested` is the delay it asked for.
public struct RetryAfterTooLong: Error, LocalizedError, CustomStringConvertible {
    /// The delay the server asked for.
    public let requested: Duration
    /// The longest wait the policy accepts.
    public let maximum: Duration
    /// The response that asked for it.
    public let response: HTTPStatusError

    public var errorDescription: String? {
        "\(response.errorDescription!) asked to retry after \(requested.components.seconds) s, "
            + "longer than the \(maximum.components.seconds) s the retry policy accepts"
    }

    public var description: String { errorDescription! }
}
