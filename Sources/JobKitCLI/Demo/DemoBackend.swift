import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where the demo's scenarios send their requests, and how they print.
struct DemoBackend: Sendable {
    let baseURL: URL
    let client: TransferClient
    /// Called on the main queue.
    let print: @Sendable (String) -> Void
    let tracers: [any JobTracer]

    func url(_ path: String) -> URL {
        URL(string: path, relativeTo: baseURL)!.absoluteURL
    }

    /// `job`, named and traced by the demo's tracers.
    func traced<Value>(_ job: Job<Value>, _ name: String) -> Job<Value> {
        tracers.reduce(job.named(name)) { $0.traced(by: $1) }
    }

    /// Performs `job` and awaits its result, delivered on the main queue.
    func outcome<Value>(of job: Job<Value>) async -> Result<Value, any Error> {
        await withCheckedContinuation { continuation in
            job.perform { continuation.resume(returning: $0) }
        }
    }

    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the caller runs on the main queue (compared by queue-specific data, which works on
    /// Linux too, where `DispatchQueue.main` is a new wrapper on every call).
    static var isOnMainQueue: Bool {
        DispatchQueue.getSpecific(key: mainQueueKey) == true
    }

    /// Deterministic bytes for an upload or a download source.
    static func bytes(count: Int, seed: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ seed &* 17) })
    }
}
