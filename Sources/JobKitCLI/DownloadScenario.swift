import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 002 over HTTP: many downloads through a `JobQueue`, at most `maxConcurrent` at once, each
/// shown pending → running n% → completed on the main queue, and one notice when all are done.
struct DownloadScenario: Sendable {
    var jobs: Int
    var maxConcurrent: Int
    var randomizeTime: Bool
    var chunkMilliseconds: Int
    var directory: URL

    /// Returns whether every download completed byte-exact.
    func run(on backend: DemoBackend) async -> Bool {
        backend.print("downloads: \(jobs) files, at most \(maxConcurrent) at once")
        // The sources: uploaded first, so that this works against any JobKit server.
        let sizes = (0..<jobs).map { _ in 128 * 1024 * (randomizeTime ? Int.random(in: 1...3) : 2) }
        let sources = sizes.enumerated().map { index, size in
            Job<HTTPReply>.upload(
                data: DemoBackend.bytes(count: size, seed: index), to: backend.url("media/download-\(index + 1).bin"),
                client: backend.client
            ).asVoid()
        }
        guard case .success = await backend.outcome(of: Job.group(sources, maxConcurrent: 4)) else {
            backend.print("downloads: could not prepare the source files")
            return false
        }
        let shown = MainQueueBox([Int: Int]())  // id → last percent bucket printed
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = JobQueue<Int>(maxConcurrent: maxConcurrent) { id, state in
                switch state {
                case .pending: backend.print("  download \(id): pending")
                case .running(let fraction):
                    let bucket = Int(fraction * 5)  // one line per 20%
                    if shown.value[id] != bucket, bucket < 5 {
                        shown.value[id] = bucket
                        backend.print("  download \(id): running \(Int(fraction * 100))%")
                    }
                case .finished: backend.print("  download \(id): completed")
                case .failed, .cancelled: backend.print("  download \(id): \(state)")
                }
            } onAllFinished: {
                backend.print("All download tasks have been completed")
                continuation.resume()
            }
            for id in 1..<jobs + 1 {
                let job = Job<URL>.download(
                    from: backend.url("downloads/download-\(id).bin?chunk-ms=\(chunkMilliseconds)"),
                    to: directory.appendingPathComponent("download-\(id).bin"), client: backend.client)
                try! queue.add(backend.traced(job.asVoid(), "download \(id)"), id: id)  // ids are unique
            }
            if jobs == 0 { continuation.resume() }
        }
        let intact = (1..<jobs + 1).allSatisfy { id in
            (try? Data(contentsOf: directory.appendingPathComponent("download-\(id).bin")))
                == DemoBackend.bytes(count: sizes[id - 1], seed: id - 1)
        }
        backend.print("downloads: \(intact ? "every file arrived byte-exact" : "some files are missing or differ")")
        return intact
    }
}

/// A value read and written only on the main queue, where the demo's handlers run.
// Safety: only touched from handlers that JobKit delivers on the main queue.
final class MainQueueBox<Value>: @unchecked Sendable {
    var value: Value

    init(_ value: Value) { self.value = value }
}
