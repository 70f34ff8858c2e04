import AsyncHTTPClient
import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The result of awaiting `job`.
func outcome<Value: Sendable>(of job: Job<Value>) async -> Result<Value, any Error> {
    await Task { try await job.value }.result
}

/// Writes a `.part` and its metadata as an interrupted download of `url` would have left them.
func leavePart(
    _ bytes: Data, of url: URL, at destination: URL, etag: String?, lastModified: String? = nil, total: Int?
) throws {
    try bytes.write(to: destination.appendingPathExtension("part"))
    var metadata: [String: Any] = ["url": url.absoluteString]
    if let etag { metadata["etag"] = etag }
    if let lastModified { metadata["lastModified"] = lastModified }
    if let total { metadata["total"] = total }
    try JSONSerialization.data(withJSONObject: metadata).write(
        to: URL(fileURLWithPath: destination.path + ".part.meta"))
}

extension Result {
    var failureError: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
