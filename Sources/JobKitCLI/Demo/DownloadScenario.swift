import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The downloads scenario over HTTP: many downloads through a `JobQueue`, at most `maxConcurrent` at once, each
/// shown pending → running n% → 100% completed on the main queue (`TransferDisplay`, in the articles' job-state
/// lines into a pipe), and one notice when all are done.
struct DownloadScenario: Sendable {
    var jobs: Int
    var maxConcurrent: Int
    var randomizeTime: Bool
    var chunkMilliseconds: Int
    var directory: URL
    /// Shows the downloads (on the main queue): `TransferDisplay.standard(json: false, quiet: false,
    /// lineStyle: .jobStates)`, or a display writing to a string in tests.
    var display: TransferDisplay

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
        let display = self.display
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = JobQueue<Int>(maxConcurrent: maxConcurrent) { id, state in
                display.update(Self.row(id: id, state: state, size: Int64(sizes[id - 1])))
            } onAllFinished: {
                display.finish()
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

    /// The display's row of download `id` in `state`.
    static func row(id: Int, state: JobState, size: Int64) -> TransferRow {
        var row = TransferRow(id: id, name: "download \(id)", totalBytes: size)
        switch state {
        case .pending: row.status = .queued
        case .running(let fraction):
            row.status = .running
            row.bytesDone = Int64((Double(size) * min(max(fraction, 0), 1)).rounded())
        case .finished:
            row.status = .completed
            row.bytesDone = size
        case .failed: row.status = .failed(reason: "")
        case .cancelled: row.status = .cancelled
        }
        return row
    }
}
