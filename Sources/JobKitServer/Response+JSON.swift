import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

extension Response {
    /// A JSON response.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// A JSON error response: `{"error": message}` (no body for 204 and 304, which cannot have one).
    static func error(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        if status.code == 204 || status.code == 304 { return Response(status: status, headers: fields) }
        fields[.contentType] = "application/json"
        let data = (try? JSONEncoder().encode(ErrorBody(error: message))) ?? Data(#"{"error":"error"}"#.utf8)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
