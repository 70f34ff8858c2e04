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

extension HTTPReply {
    /// Turns a transfer's end into a result: transport errors as `TransportError`, non-2xx statuses
    /// as `HTTPStatusError`.
    static func validated(_ data: Data, _ response: URLResponse?, _ error: (any Error)?, url: URL?)
        -> Result<HTTPReply, any Error>
    {
        if let error { return .failure(TransportError.readable(error, url: url)) }
        guard let http = response as? HTTPURLResponse else {
            return .failure(TransportError(URLError(.badServerResponse), url: url))
        }
        let response = HTTPReply(http, body: data)
        return (200..<300).contains(response.status) ? .success(response) : .failure(HTTPStatusError(response))
    }
}
