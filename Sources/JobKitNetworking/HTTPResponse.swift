import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A complete HTTP response: status, headers and body.
public struct HTTPResponse: Sendable {
    public let status: Int
    /// Header names in lower case.
    public let headers: [String: String]
    public let body: Data
    public let url: URL?

    init(_ response: HTTPURLResponse, body: Data) {
        status = response.statusCode
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        self.headers = headers
        self.body = body
        url = response.url
    }
}

/// A response whose status is not 2xx.
public struct HTTPStatusError: Error, RetryAfterProviding, CustomStringConvertible {
    public static let excerptLimit = 512

    public let status: Int
    /// Header names in lower case.
    public let headers: [String: String]
    /// The start of the body, at most `excerptLimit` bytes, as text.
    public let bodyExcerpt: String
    public let url: URL?

    init(_ response: HTTPResponse) {
        status = response.status
        headers = response.headers
        bodyExcerpt = String(decoding: response.body.prefix(Self.excerptLimit), as: UTF8.self)
        url = response.url
    }

    /// `Retry-After` in seconds, when the server sent one.
    public var retryAfter: Duration? {
        headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { .seconds($0) }
    }

    public var description: String {
        "HTTP \(status) from \(url?.absoluteString ?? "?"): \(bodyExcerpt)"
    }
}

/// A body that did not decode; `path` names the field that failed, like `feed.results[2].name`.
public struct DecodingFailure: Error, CustomStringConvertible {
    public let type: String
    public let path: String
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

    public var description: String {
        "could not decode \(type) at \(path.isEmpty ? "the top level" : path): \(reason)"
    }
}
