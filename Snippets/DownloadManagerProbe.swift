// A `DownloadManager` in a process of its own, for the tests that `kill -9` it: built beside the tests
// (a snippet, so it is no product of the package and never part of the shipped `jobkit`).
import Dispatch
import Foundation
import JobKitNetworking

ProbeDownloadManager.run(Array(CommandLine.arguments.dropFirst()))

/// `DownloadManagerProbe DIRECTORY URL…`: a `DownloadManager` in its own process, for the
/// tests that `kill -9` it mid-run and open the directory again (JobKitNetworkingTests).
///
/// Adds every URL (4 at once), prints `completed NAME` (flushed) as each file completes and
/// `finished COMPLETED FAILED` when the queue drains, then exits 0. A directory another manager
/// holds prints the error and exits 3. With `DOWNLOAD_PROBE_EVENTS` naming a FIFO (or a file), it
/// also writes there, with each delivery, `received NAME BYTES` for every running item and
/// `completed NAME` for each completed one: a test waits on them instead of polling the directory.
enum ProbeDownloadManager {
    static func run(_ arguments: [String]) -> Never {
        guard let directory = arguments.first else {
            say("usage: DownloadManagerProbe DIRECTORY URL…")
            exit(64)
        }
        let results = DispatchQueue(label: "probe.download-manager")
        let events = ProcessInfo.processInfo.environment["DOWNLOAD_PROBE_EVENTS"].flatMap {
            FileHandle(forWritingAtPath: $0)
        }
        let manager: DownloadManager
        do {
            manager = try DownloadManager(
                directory: URL(fileURLWithPath: directory),
                configuration: .init(maxConcurrent: 4, retry: .none), resultQueue: results
            ) { update in
                for case .changed(let item) in update.events where item.state == .completed {
                    say("completed \(item.name)")
                    events?.write(Data("completed \(item.name)\n".utf8))
                }
                for item in update.items where item.state == .running {
                    events?.write(Data("received \(item.name) \(item.progress.received)\n".utf8))
                }
            }
            try manager.add(contentsOf: arguments.dropFirst().compactMap(URL.init(string:)).map { .init(url: $0) })
        } catch {
            say("error: \(error.localizedDescription)")
            exit(3)
        }
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let summary = await manager.waitUntilFinished()
            say("finished \(summary.completed.count) \(summary.failed.count)")
            done.signal()
        }
        done.wait()
        manager.close()
        exit(0)
    }

    /// Writes one line at once (unbuffered, so that a test reads it before a `kill -9`).
    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
