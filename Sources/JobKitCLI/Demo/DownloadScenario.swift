import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The downloads scenario over HTTP: many downloads through a `JobQueue`, at most `maxConcurrent` at once, each
/// shown pending → running n% → 100% completed on the main queue (`DownloadProgressView`), and one notice when
/// all are done.
struct DownloadScenario: Sendable {
    var jobs: Int
    var maxConcurrent: Int
    var randomizeTime: Bool
    var chunkMilliseconds: Int
    var directory: URL
    /// How the downloads are shown: redrawn in place on a terminal, one line per change otherwise.
    var progressMode: DownloadProgressView.Mode
    /// Writes text as it is, flushed at once; called on the main queue.
    var write: @Sendable (String) -> Void

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
        let view = MainQueueBox(DownloadProgressView(mode: progressMode))
        let write = self.write
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = JobQueue<Int>(maxConcurrent: maxConcurrent) { id, state in
                let text = view.value.update(id: id, state: state)
                if !text.isEmpty { write(text) }
            } onAllFinished: {
                backend.print("All download tasks have been completed")
                continuation.resume()
            }
            for id in 1..<jobs + 1 {
                let job = Job<URL>.download(
                    from: backend.url("downloads/download-\(id).bin?chunk-ms=\(chunkMilliseconds)"),
                    to: directory.appendingPathComponent("download-\(id).bin"), transport: .urlSession(backend.client))
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
