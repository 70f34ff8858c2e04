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
    ///
    /// Items with `dir=` go to their subfolder through a manager of its own (`Configuration.subfolder`:
    /// made under `folder`, never through a symbolic link, with its own journal). The managers run one
    /// after another — the output folder's first, then each subfolder in the plan's order — so `-j` and
    /// the overall speed limit hold for the whole command; one display and one summary cover them all.
    /// A subfolder that cannot be used fails its items only.
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
        let interrupted = InterruptedFlag()
        let interrupt = InterruptSignal {
            interrupted.isSet = true
            interrupted.manager?.close()  // running downloads stop; .parts and journal stay for the next run
        }
        defer { interrupt.cancel() }
        var outcome = Outcome()
        for (index, group) in plan.bySubfolder.enumerated() where !interrupted.isSet {
            configuration.subfolder = group.subfolder
            let manager: DownloadManager
            let view = DownloadView(display: display, rowOffset: index << 32, subfolder: group.subfolder)
            // --quiet shows no update: the manager then makes none. Delivered on the main actor.
            let onUpdate: (@MainActor @Sendable (DownloadManager.Update) -> Void)? =
                options.quiet && !options.json ? nil : { @MainActor @Sendable update in view.show(update) }
            do {
                manager = try DownloadManager(directory: folder, configuration: configuration, updateHandler: onUpdate)
            } catch {
                // The output folder itself: the command cannot run. A subfolder: its items fail.
                guard group.subfolder != nil else { return CommandLineError.report(error) }
                for item in group.items {
                    outcome.refuse(item, CommandLineError.describe(error), on: display)
                }
                continue
            }
            interrupted.manager = manager
            let ids: [DownloadManager.ItemID]
            do {
                ids = try start(
                    group.items, on: manager, view: view, outcome: &outcome, display: display,
                    allowOverwrite: allowOverwrite, network: network)
            } catch {
                manager.close()
                return CommandLineError.report(error)
            }
            let summary = await manager.waitUntilFinished()
            let byID = Dictionary(summary.items.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
            outcome.items += ids.compactMap { byID[$0] }.map { (group.subfolder.map { $0 + "/" } ?? "", $0) }
            manager.close()
            interrupted.manager = nil
        }
        display.finish()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return report(
            outcome, total: plan.items.count, interrupted: interrupted.isSet, seconds: seconds, options: options)
    }

    /// Adds `items` to `manager` (`admit` first: the items it refuses go to `outcome`) and resumes them; their
    /// ids.
    ///
    /// - Throws: what `add` or `resume` threw (the journal cannot be written): the command cannot go on.
    private static func start(
        _ items: [DownloadPlan.Item], on manager: DownloadManager, view: DownloadView, outcome: inout Outcome,
        display: TransferDisplay, allowOverwrite: Bool, network: DownloadNetworkSettings
    ) throws -> [DownloadManager.ItemID] {
        for problem in manager.journalProblems {
            printWarning("\(manager.journalURL.path): \(problem.escapingControlCharacters)")
        }
        var (requests, refused) = admit(items, to: manager, allowOverwrite: allowOverwrite)
        for index in requests.indices where requests[index].maxBytesPerSecond == nil {
            requests[index].maxBytesPerSecond = network.itemLimit
        }
        // 0: no split= of its own, the command's -x.
        for index in requests.indices where requests[index].connections == 0 {
            requests[index].connections = network.connections
        }
        for (item, message) in refused { outcome.refuse(item, message, on: display) }
        let ids = try manager.add(contentsOf: requests)
        view.runIDs = Set(ids)  // before any update is shown: they are delivered on this queue, later
        // The command names them: one an app left suspended in the journal runs too.
        for id in ids where manager.item(id)?.state == .suspended { try manager.resume(id) }
        return ids
    }

    /// What the managers of a run ended with: this run's items (with the subfolder prefix of their path, `a/b/`
    /// or empty), and the plan's items that could not run.
    struct Outcome {
        var items: [(prefix: String, item: DownloadManager.Item)] = []
        var refused: [Refusal] = []

        /// Records `item` as refused with `message`, and shows its row.
        @MainActor
        mutating func refuse(_ item: DownloadPlan.Item, _ message: String, on display: TransferDisplay) {
            let refusal = Refusal(item: item, message: message, rowID: -1 - refused.count)
            refused.append(refusal)
            display.update(refusal.row)
        }
    }

    /// A plan item that cannot run: its name is another URL's in the journal.
    struct Refusal {
        var item: DownloadPlan.Item
        var message: String
        /// Its row's id: negative, apart from the manager's items'.
        var rowID: Int

        var row: TransferRow {
            var row = TransferRow(id: rowID, name: item.path, bytesDone: 0, totalBytes: nil)
            row.status = .failed(reason: message)
            return row
        }
    }

    /// The requests of `items` the manager can take, and the items refused: a name that the journal
    /// holds for another URL or checksum is refused, or (with `allowOverwrite`) its old item removed
    /// from the journal (its file stays until the new one replaces it).
    private static func admit(_ items: [DownloadPlan.Item], to manager: DownloadManager, allowOverwrite: Bool)
        -> (requests: [DownloadManager.Request], refused: [(DownloadPlan.Item, String)])
    {
        let byName = Dictionary(manager.items.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        var requests: [DownloadManager.Request] = []
        var refused: [(DownloadPlan.Item, String)] = []
        for item in items {
            let checksum = item.checksum.flatMap { try? Checksum(parsing: $0) }
            if let holder = byName[item.name], holder.url != item.url || holder.checksum != checksum {
                guard allowOverwrite else {
                    refused.append(
                        (
                            item,
                            "the file name '\(item.name)' is already taken by download \(holder.id) of "
                                + "\(holder.url.redactedString) in this folder: use --allow-overwrite to replace it, "
                                + "or out=NAME in an input file for another name"
                        ))
                    continue
                }
                do {
                    try manager.remove(holder.id)
                } catch {
                    refused.append((item, CommandLineError.describe(error)))
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
        _ outcome: Outcome, total: Int, interrupted: Bool, seconds: Double, options: TransferOptions
    ) -> ExitCode {
        let completed = outcome.items.map(\.item).filter { $0.state == .completed }
        var failed = outcome.items.compactMap { prefix, item -> (name: String, url: URL, message: String)? in
            guard case .failed(let failure) = item.state else { return nil }
            let hint = failure.kind == .fileInTheWay ? " (--allow-overwrite replaces it)" : ""
            return (prefix + item.name, item.url, failure.message + hint)
        }
        failed += outcome.refused.map { ($0.item.path, $0.item.url, $0.message) }
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
