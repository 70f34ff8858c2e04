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
    @MainActor
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
        let screen = DownloadsScreen(display: display, sizes: sizes, maxConcurrent: maxConcurrent, backend: backend)
        await screen.download(jobs) { id in
            Job<URL>.download(
                from: backend.url("downloads/download-\(id).bin?chunk-ms=\(chunkMilliseconds)"),
                to: directory.appendingPathComponent("download-\(id).bin"), transport: .urlSession(backend.client))
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

/// Seed 002's screen: a main-actor class that runs the downloads through a `JobQueue` and shows each
/// one's state, touching its own state in the queue's handlers as written.
@MainActor
final class DownloadsScreen {
    private let display: TransferDisplay
    private let sizes: [Int]
    private let maxConcurrent: Int
    private let backend: DemoBackend
    /// The downloads that have ended.
    private(set) var ended = 0

    init(display: TransferDisplay, sizes: [Int], maxConcurrent: Int, backend: DemoBackend) {
        self.display = display
        self.sizes = sizes
        self.maxConcurrent = maxConcurrent
        self.backend = backend
    }

    /// Downloads `count` files (ids 1 through `count`, each `download(id)`), showing each; returns once
    /// all have ended.
    func download(_ count: Int, _ download: (Int) -> Job<URL>) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = JobQueue<Int>(maxConcurrent: maxConcurrent) { id, state in
                self.display.update(DownloadScenario.row(id: id, state: state, size: Int64(self.sizes[id - 1])))
                if state.isFinal { self.ended += 1 }
            } onAllFinished: {
                // Once every download ended (the queue may also drain between two adds).
                guard self.ended == count else { return }
                self.display.finish()
                self.backend.print("All download tasks have been completed")
                continuation.resume()
            }
            for id in 1..<count + 1 {
                try! queue.add(backend.traced(download(id).asVoid(), "download \(id)"), id: id)  // ids are unique
            }
            if count == 0 { continuation.resume() }
        }
    }
}
