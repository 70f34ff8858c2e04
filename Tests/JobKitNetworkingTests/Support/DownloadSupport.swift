import AsyncHTTPClient
import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The result of a run of `job`; after the safety deadline an issue is recorded, the run cancelled
/// and `WaitTimedOut` returned.
func outcome<Value: Sendable>(
    of job: Job<Value>, sourceLocation: SourceLocation = #_sourceLocation
) async -> Result<Value, any Error> {
    let handle = LockedBox<JobHandle?>.make(nil)
    let result = await awaitCallback("the run's handler", sourceLocation: sourceLocation) { continuation in
        let run = job.perform(resultQueue: .global()) { continuation.resume(returning: $0) }
        handle.withLock { $0 = run }
    }
    guard let result else {
        handle.withLock { $0 }?.cancel()
        return .failure(WaitTimedOut("the run's handler", timeout: safetyDeadline))
    }
    return result
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
