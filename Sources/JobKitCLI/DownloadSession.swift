import ArgumentParser
import Dispatch
import Foundation
import JobKitNetworking

/// One run of `jobkit download`: a `DownloadManager` on the output folder, the plan's items added to it, the
/// display fed from its updates, Ctrl-C closing it cleanly, and the summary.
///
/// Runs on the main actor, which is the main queue the manager delivers its updates on.
@MainActor
enum DownloadSession {
    /// Downloads `plan` into `folder`, as durable as `durability` says; returns the exit code.
    static func run(
        _ plan: DownloadPlan, into folder: URL, options: TransferOptions, durability: Durability = .process
    ) async -> ExitCode {
        StandardOutput.makeLineBuffered()
        let display = TransferDisplay.standard(json: options.json, quiet: options.quiet)
        let started = DispatchTime.now()
        let configuration = DownloadManager.Configuration(
            maxConcurrent: options.maxConcurrent,
            retry: DownloadManager.RetryPolicy(attempts: options.retry + 1), durability: durability)
        let view = DownloadView(display: display)
        let manager: DownloadManager
        do {
            manager = try DownloadManager(directory: folder, configuration: configuration) { update in
                MainActor.assumeIsolated { view.show(update) }  // delivered on the main queue
            }
        } catch {
            return CommandLineError.report(error)
        }
        let requests = plan.items.map { item in
            DownloadManager.Request(
                url: item.url, name: item.name, checksum: item.checksum.flatMap { try? Checksum(parsing: $0) })
        }
        let ids: [DownloadManager.ItemID]
        do {
            ids = try manager.add(contentsOf: requests)
            view.runIDs = Set(ids)  // before any update is shown: they are delivered on this queue, later
        } catch {
            manager.close()
            return CommandLineError.report(error)
        }
        let interrupted = InterruptedFlag()
        let interrupt = InterruptSignal {
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    interrupted.isSet = true
                    manager.close()  // running downloads stop; their .parts and the journal stay for the next run
                }
            }
        }
        defer { interrupt.cancel() }
        let summary = await manager.waitUntilFinished()
        manager.close()
        display.finish()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return report(summary, ids: ids, plan: plan, interrupted: interrupted.isSet, seconds: seconds, options: options)
    }

    /// The summary's lines and the exit code: only this run's items count.
    private static func report(
        _ summary: DownloadManager.Summary, ids: [DownloadManager.ItemID], plan: DownloadPlan, interrupted: Bool,
        seconds: Double, options: TransferOptions
    ) -> ExitCode {
        let byID = Dictionary(summary.items.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        let items = ids.compactMap { byID[$0] }
        let completed = items.filter { $0.state == .completed }
        let failed = items.compactMap { item -> (DownloadManager.Item, DownloadManager.Failure)? in
            if case .failed(let failure) = item.state { return (item, failure) }
            return nil
        }
        let bytes = completed.reduce(Int64(0)) { $0 &+ max(0, $1.progress.received) }
        if options.json {
            struct Summary: Encodable {
                var event = "summary"
                var completed: Int
                var failed: Int
                var remaining: Int
                var bytes: Int64
                var seconds: Double
                var interrupted: Bool
            }
            let line = TransferEventFormat.jsonLine(
                Summary(
                    completed: completed.count, failed: failed.count,
                    remaining: items.count - completed.count - failed.count, bytes: bytes,
                    seconds: (seconds * 1000).rounded() / 1000, interrupted: interrupted))
            StandardOutput.write((line ?? "") + "\n")
        }
        for (item, failure) in failed {
            printError("\(item.name) (\(item.url.absoluteString)): \(failure.message)")
        }
        if interrupted {
            printError(
                "interrupted: \(completed.count) of \(items.count) files done; run the same command again to resume")
            return CommandLineError.interrupted
        }
        if !failed.isEmpty {
            printError("\(failed.count) of \(items.count) downloads failed")
            return CommandLineError.failure
        }
        if !options.json && !options.quiet {
            let time = seconds < 10 ? String(format: "%.2f s", seconds) : TransferUnits.duration(seconds)
            StandardOutput.write(
                "downloaded \(completed.count) file\(completed.count == 1 ? "" : "s") "
                    + "(\(TransferUnits.bytes(bytes))) in \(time)\n")
        }
        return .success
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    }
}

/// A flag set on the main actor.
@MainActor
final class InterruptedFlag {
    var isSet = false
}

/// What the display shows of a manager's updates: this run's items, and items restored from the journal that
/// are still to be downloaded (an earlier run's leftovers, which the manager resumes) — not an earlier run's
/// finished items.
@MainActor
final class DownloadView {
    private let display: TransferDisplay
    /// The items this run added (or found in the journal).
    var runIDs: Set<DownloadManager.ItemID> = []
    private var shown: Set<DownloadManager.ItemID> = []

    init(display: TransferDisplay) {
        self.display = display
    }

    /// Shows the events of `update`, then the progress of every running item.
    func show(_ update: DownloadManager.Update) {
        let now = Dictionary(update.items.map { ($0.id, $0.state) }, uniquingKeysWith: { $1 })
        for event in update.events {
            guard case .changed(let item) = event else { continue }
            // An earlier run's end, restored from the journal and already queued again: not news.
            if !item.state.isActive, now[item.id]?.isActive == true, !shown.contains(item.id) { continue }
            show(item)
        }
        for item in update.items where item.state == .running || item.state == .verifying { show(item) }
    }

    private func show(_ item: DownloadManager.Item) {
        guard runIDs.contains(item.id) || shown.contains(item.id) || item.state.isActive else { return }
        shown.insert(item.id)
        display.update(DownloadRows.row(for: item))
    }
}
