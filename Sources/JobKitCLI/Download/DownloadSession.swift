import ArgumentParser
import Dispatch
import Foundation
import JobKit
import JobKitNetworking
import Logging

/// One run of `jobkit download`: a `DownloadManager` on the output folder, the plan's items added to it, the
/// display fed from its updates, Ctrl-C closing it cleanly, and the summary.
///
/// Runs on the main actor, which is the main queue the manager delivers its updates on.
@MainActor
enum DownloadSession {
    /// Downloads `plan` into `folder`, as durable as `durability` says; returns the exit code.
    ///
    /// Only the plan's items run: an earlier command's leftovers in the folder's journal stay there,
    /// untouched, and count for nothing here. A name the journal holds for another URL (or
    /// checksum) fails that item only, unless `allowOverwrite`, which also replaces a file in the way.
    /// `tracers` trace every download; the manager logs to `logger` when given; `network` sets its speed
    /// limits, trusted certificate authorities and HTTP version.
    static func run(
        _ plan: DownloadPlan, into folder: URL, options: TransferOptions, durability: Durability = .process,
        allowOverwrite: Bool = false, tracers: [any JobTracer] = [], logger: Logger? = nil,
        network: DownloadNetworkSettings = DownloadNetworkSettings()
    ) async -> ExitCode {
        StandardOutput.makeLineBuffered()
        let display = TransferDisplay.standard(json: options.json, quiet: options.quiet)
        let started = DispatchTime.now()
        var configuration = DownloadManager.Configuration(
            maxConcurrent: options.maxConcurrent,
            retry: DownloadManager.RetryPolicy(attempts: options.retry + 1), durability: durability)
        configuration.startsRestoredItems = false
        configuration.tracers = tracers
        network.apply(to: &configuration)
        if let logger { configuration.logger = logger }
        let view = DownloadView(display: display)
        let manager: DownloadManager
        do {
            manager = try DownloadManager(directory: folder, configuration: configuration) { update in
                MainActor.assumeIsolated { view.show(update) }  // delivered on the main queue
            }
        } catch {
            return CommandLineError.report(error)
        }
        for problem in manager.journalProblems {
            printWarning("\(manager.journalURL.path): \(problem.escapingControlCharacters)")
        }
        var (requests, refused) = admit(plan, to: manager, allowOverwrite: allowOverwrite)
        for index in requests.indices where requests[index].maxBytesPerSecond == nil {
            requests[index].maxBytesPerSecond = network.itemLimit
        }
        // 0: no split= of its own, the command's -x.
        for index in requests.indices where requests[index].connections == 0 {
            requests[index].connections = network.connections
        }
        let ids: [DownloadManager.ItemID]
        do {
            ids = try manager.add(contentsOf: requests)
            view.runIDs = Set(ids)  // before any update is shown: they are delivered on this queue, later
            // The command names them: one an app left suspended in the journal runs too.
            for id in ids where manager.item(id)?.state == .suspended { try manager.resume(id) }
        } catch {
            manager.close()
            return CommandLineError.report(error)
        }
        for refusal in refused { display.update(refusal.row) }
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
        return report(
            summary, ids: ids, refused: refused, interrupted: interrupted.isSet, seconds: seconds, options: options)
    }

    /// A plan item that cannot run: its name is another URL's in the journal.
    struct Refusal {
        var item: DownloadPlan.Item
        var message: String
        /// Its row's id: negative, apart from the manager's items'.
        var rowID: Int

        var row: TransferRow {
            var row = TransferRow(id: rowID, name: item.name, bytesDone: 0, totalBytes: nil)
            row.status = .failed(reason: message)
            return row
        }
    }

    /// The requests of `plan` the manager can take, and the items refused: a name that the journal
    /// holds for another URL or checksum is refused, or (with `allowOverwrite`) its old item removed
    /// from the journal (its file stays until the new one replaces it).
    private static func admit(_ plan: DownloadPlan, to manager: DownloadManager, allowOverwrite: Bool)
        -> (requests: [DownloadManager.Request], refused: [Refusal])
    {
        let byName = Dictionary(manager.items.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        var requests: [DownloadManager.Request] = []
        var refused: [Refusal] = []
        for item in plan.items {
            let checksum = item.checksum.flatMap { try? Checksum(parsing: $0) }
            if let holder = byName[item.name], holder.url != item.url || holder.checksum != checksum {
                guard allowOverwrite else {
                    refused.append(
                        Refusal(
                            item: item,
                            message:
                                "the file name '\(item.name)' is already taken by download \(holder.id) of "
                                + "\(holder.url.redactedString) in this folder: use --allow-overwrite to replace it, "
                                + "or out=NAME in an input file for another name",
                            rowID: -1 - refused.count))
                    continue
                }
                do {
                    try manager.remove(holder.id)
                } catch {
                    refused.append(
                        Refusal(item: item, message: CommandLineError.describe(error), rowID: -1 - refused.count))
                    continue
                }
            }
            requests.append(
                DownloadManager.Request(
                    url: item.url, name: item.name, checksum: checksum, replacesExistingFile: allowOverwrite,
                    headers: item.headers, maxBytesPerSecond: item.maxBytesPerSecond,
                    connections: item.connections ?? 0))
        }
        return (requests, refused)
    }

    /// The summary's lines and the exit code: only this run's items count.
    private static func report(
        _ summary: DownloadManager.Summary, ids: [DownloadManager.ItemID], refused: [Refusal], interrupted: Bool,
        seconds: Double, options: TransferOptions
    ) -> ExitCode {
        let byID = Dictionary(summary.items.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        let items = ids.compactMap { byID[$0] }
        let completed = items.filter { $0.state == .completed }
        var failed = items.compactMap { item -> (name: String, url: URL, message: String)? in
            guard case .failed(let failure) = item.state else { return nil }
            let hint = failure.kind == .fileInTheWay ? " (--allow-overwrite replaces it)" : ""
            return (item.name, item.url, failure.message + hint)
        }
        failed += refused.map { ($0.item.name, $0.item.url, $0.message) }
        let total = items.count + refused.count
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
                    remaining: total - completed.count - failed.count, bytes: bytes,
                    seconds: (seconds * 1000).rounded() / 1000, interrupted: interrupted))
            StandardOutput.write((line ?? "") + "\n")
        }
        for (name, url, message) in failed {
            printError("\(name) (\(url.redactedString)): \(message)")
        }
        if interrupted {
            printError("interrupted: \(completed.count) of \(total) files done; run the same command again to resume")
            return CommandLineError.interrupted
        }
        if !failed.isEmpty {
            printError("\(failed.count) of \(total) downloads failed")
            return CommandLineError.failure
        }
        if completed.count < total {
            printError("\(total - completed.count) of \(total) downloads did not finish")
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

    /// Writes `error: MESSAGE` on standard error, control characters escaped (names, URLs and
    /// reasons come from servers and files).
    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data("error: \(message.escapingControlCharacters)\n".utf8))
    }

    private static func printWarning(_ message: String) {
        FileHandle.standardError.write(Data("warning: \(message.escapingControlCharacters)\n".utf8))
    }
}
