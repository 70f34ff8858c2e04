import AsyncHTTPClient
import Foundation
import JobKit
import JobKitNetworking
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A fresh folder for one test.
func scratchFolder() throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-net-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Deterministic bytes, different for each `seed`.
func pattern(_ count: Int, seed: Int = 1) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 101) })
}

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
