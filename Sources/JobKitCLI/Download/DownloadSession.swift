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
    /// limits, trusted certificate authorities and HTTP version. `outputPaths` (`--trace`, by option) are
    /// checked against the names each folder's journal holds when it is opened: one of them is a usage error.
    ///
    /// Items with `dir=` go to their subfolder through a manager of its own (`Configuration.subfolder`:
    /// made under `folder`, never through a symbolic link, with its own journal). The managers run one
    /// after another — the output folder's first, then each subfolder in the plan's order — so `-j` and
    /// the overall speed limit hold for the whole command; one display and one summary cover them all.
    /// A subfolder that cannot be used fails its items only.
    static func run(
        _ plan: DownloadPlan, into folder: URL, options: TransferOptions, durability: Durability = .process,
        allowOverwrite: Bool = false, tracers: [any JobTracer] = [], logger: Logger? = nil,
        network: DownloadNetworkSettings = DownloadNetworkSettings(), outputPaths: [(option: String, path: String)] = []
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
            // A file an earlier run left in the journal is the folder's too: an output path never replaces it.
            let held = [group.subfolder: Set(manager.items.map(\.name))]
            for (option, path) in outputPaths {
                if let problem = OutputPathGuard.problem(
                    with: path, option: option, folder: folder.path, plan: plan, held: held)
                {
                    manager.close()
                    display.finish()
                    return CommandLineError.usage(problem)
                }
            }
            interrupted.manager = manager
            let ids: Set<DownloadManager.ItemID>
            do {
                ids = try start(
                    group.items, on: manager, view: view, outcome: &outcome, display: display,
                    allowOverwrite: allowOverwrite, network: network)
            } catch {
                manager.close()
                return CommandLineError.report(error)
            }
            outcome.count(
                await manager.waitUntilFinished(), of: ids, prefix: group.subfolder.map { $0 + "/" } ?? "")
            manager.close()
            interrupted.manager = nil
        }
        display.finish()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return report(
            outcome, total: plan.items.count, interrupted: interrupted.isSet, seconds: seconds, options: options)
    }

    /// Adds `items` to `manager` (`admit` first: the items it refuses go to `outcome`) and resumes them; their
    /// ids (the view's `runIDs`).
    ///
    /// - Throws: what `add` or `resume` threw (the journal cannot be written): the command cannot go on.
    private static func start(
        _ items: [DownloadPlan.Item], on manager: DownloadManager, view: DownloadView, outcome: inout Outcome,
        display: TransferDisplay, allowOverwrite: Bool, network: DownloadNetworkSettings
    ) throws -> Set<DownloadManager.ItemID> {
        for problem in manager.journalProblems {
            printWarning("\(manager.journalURL.path): \(problem.escapingControlCharacters)")
        }
        // The journal's items, before this command adds any (the plan's names are all different).
        let held = manager.items
        let byName = Dictionary(held.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        // Complete from an earlier run (kept, not fetched again): judged before anything starts, for
        // a small file added now may be complete already when `add` returns.
        let completedBefore = Set(held.lazy.filter { $0.state == .completed }.map(\.id))
        removeRenamed(items, held: held, from: manager)
        manager.reserveCapacity(forAdding: items.count)
        var runIDs = Set<DownloadManager.ItemID>(minimumCapacity: items.count)
        // In batches: the requests of a batch and the manager's checked copy of them are alive at once,
        // not those of every item. A batch the journal cannot take stops the command (a full disk);
        // the batches before it stay in the journal, and the next run goes on with them.
        for first in stride(from: 0, to: items.count, by: addBatch) {
            let batch = items[first..<min(first + addBatch, items.count)]
            var (requests, refused, again) = admit(batch, byName: byName, to: manager, allowOverwrite: allowOverwrite)
            for index in requests.indices where requests[index].maxBytesPerSecond == nil {
                requests[index].maxBytesPerSecond = network.itemLimit
            }
            // 0: no split= of its own, the command's -x.
            for index in requests.indices where requests[index].connections == 0 {
                requests[index].connections = network.connections
            }
            for (item, message) in refused { outcome.refuse(item, message, on: display) }
            let ids = try manager.add(contentsOf: requests)
            runIDs.formUnion(ids)
            for id in ids {
                if completedBefore.contains(id) && !again.contains(id) { outcome.alreadyComplete.insert(id) }
                // The command names them: one an app left suspended in the journal runs too.
                if manager.item(id)?.state == .suspended { try manager.resume(id) }
            }
        }
        // Before any update is shown: they are delivered on this queue, later.
        view.runIDs = runIDs
        return runIDs
    }

    /// How many items `start` adds at once.
    static let addBatch = 8_192

    /// What the managers of a run ended with: counts of this run's items, and the ones that failed or could
    /// not run — not every item (a run of 100,000 files keeps its memory for the downloads).
    struct Outcome {
        /// This run's completed items, and their bytes.
        var completed = 0
        var completedBytes: Int64 = 0
        /// Of those, the ones that were complete before this run (kept, nothing fetched), and their bytes.
        var earlier = 0
        var earlierBytes: Int64 = 0
        /// This run's failed items: the path under the output folder (`a/b/name`), the URL and the reason.
        var failed: [(path: String, url: URL, message: String)] = []
        var refused: [Refusal] = []
        /// The ids of the current manager's items that were complete before this run.
        var alreadyComplete: Set<DownloadManager.ItemID> = []

        /// Counts the items of `summary` that `ids` names (this run's, of a manager whose items' paths start
        /// with `prefix`: `a/b/` or empty).
        mutating func count(_ summary: DownloadManager.Summary, of ids: Set<DownloadManager.ItemID>, prefix: String) {
            for item in summary.items where ids.contains(item.id) {
                switch item.state {
                case .completed:
                    let bytes = max(0, item.progress.received)
                    completed += 1
                    completedBytes &+= bytes
                    if alreadyComplete.contains(item.id) {
                        earlier += 1
                        earlierBytes &+= bytes
                    }
                case .failed(let failure):
                    let hint = failure.kind == .fileInTheWay ? " (--allow-overwrite replaces it)" : ""
                    failed.append((prefix + item.name, item.url, failure.message + hint))
                default: break
                }
            }
            alreadyComplete = []
        }

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
    /// (`byName`: its items when the command began) holds for another URL or checksum is refused, or,
    /// with `allowOverwrite`, taken: a completed item of the same checksum is downloaded again by the
    /// request (`again`: its file and record stay until the new file replaces them), any other is
    /// removed from the journal first (a completed file stays until the new one replaces it).
    ///
    /// The journal's item is this one, not another, when only the URL's query differs and the item is
    /// unfinished (a refreshed signed URL: the item takes the new URL, and resumes its `.part` when the
    /// server's validator proves the same file), or when only a `checksum=` was added: a completed file is then checked
    /// against it, as every completed file with a checksum is (a file edited since fails its item).
    /// (An unfinished item of the journal with the same URL under another name, which this command
    /// names no more, is removed before: `removeRenamed`.)
    private static func admit(
        _ items: ArraySlice<DownloadPlan.Item>, byName: [String: DownloadManager.Item], to manager: DownloadManager,
        allowOverwrite: Bool
    ) -> (
        requests: [DownloadManager.Request], refused: [(DownloadPlan.Item, String)], again: Set<DownloadManager.ItemID>
    ) {
        var requests: [DownloadManager.Request] = []
        var refused: [(DownloadPlan.Item, String)] = []
        var again = Set<DownloadManager.ItemID>()
        for item in items {
            // The check `add` makes, item by item: a port beyond 65535 fails its item only.
            if let problem = DownloadURLCheck.problem(with: item.url) {
                refused.append((item, "cannot download \(item.url.redactedString): \(problem.reason)"))
                continue
            }
            var checksum = item.checksum.flatMap { try? Checksum(parsing: $0) }
            if let holder = byName[item.name] {
                // A refreshed query is the same download only while it is unfinished: its resume sends the
                // validator, which proves the file. A completed item is not asked again: another query
                // may be another file (`?id=2`), so the name is taken, as for another URL.
                let sameFile =
                    holder.url == item.url || (holder.state != .completed && isSameFile(holder.url, item.url))
                // Added to a completed item: checked here. To an unfinished one: a new item (the
                // manager keeps an item's checksum from its start).
                let checksumAdded = holder.checksum == nil && checksum != nil && holder.state == .completed
                if sameFile && (holder.checksum == checksum || checksumAdded) {
                    if let problem = verify(holder, against: checksum, in: manager) {
                        refused.append((item, problem))
                        continue
                    }
                    if holder.url != item.url {
                        do {
                            try manager.replaceURL(holder.id, with: item.url)
                        } catch {
                            refused.append((item, CommandLineError.describe(error)))
                            continue
                        }
                    }
                    if checksumAdded { checksum = nil }  // verified above; the item stays as it is
                } else if holder.url != item.url || holder.checksum != checksum {
                    guard allowOverwrite else {
                        refused.append((item, taken(item.name, by: holder, url: item.url, checksum: checksum)))
                        continue
                    }
                    // A completed file of the same checksum is downloaded again by the request
                    // (`replacesExistingFile`, `downloadAgain`): it and its record stay until the new
                    // file replaces them. Anything else is removed first: an unfinished `.part` is no
                    // file, and another checksum is another item.
                    if holder.state == .completed && holder.checksum == checksum {
                        again.insert(holder.id)
                    } else {
                        do {
                            try manager.remove(holder.id)
                        } catch {
                            refused.append((item, CommandLineError.describe(error)))
                            continue
                        }
                    }
                }
            }
            requests.append(
                DownloadManager.Request(
                    url: item.url, name: item.name, checksum: checksum, replacesExistingFile: allowOverwrite,
                    headers: item.headers, maxBytesPerSecond: item.maxBytesPerSecond,
                    connections: item.connections ?? 0))
        }
        return (requests, refused, again)
    }

    /// Whether `old` and `new` name the same file: equal but for their query (and fragment).
    static func isSameFile(_ old: URL, _ new: URL) -> Bool {
        guard var a = URLComponents(url: old, resolvingAgainstBaseURL: false),
            var b = URLComponents(url: new, resolvingAgainstBaseURL: false)
        else { return old == new }
        a.percentEncodedQuery = nil
        b.percentEncodedQuery = nil
        a.fragment = nil
        b.fragment = nil
        return a == b
    }

    /// Why `holder`'s completed file fails `checksum` (the item's own when nil), or nil when it
    /// matches, has no checksum to match, or is not completed (its download verifies it).
    private static func verify(_ holder: DownloadManager.Item, against checksum: Checksum?, in manager: DownloadManager)
        -> String?
    {
        guard holder.state == .completed, let expected = checksum ?? holder.checksum else { return nil }
        let file = manager.journalURL.deletingLastPathComponent().appendingPathComponent(holder.name)
        do {
            let actual = try Checksum.digest(expected.algorithm, ofFileAt: file.path)
            guard actual != expected else { return nil }
            return "\(file.path) does not match its checksum: \(expected.algorithm.rawValue) is \(actual.hex), "
                + "not \(expected.hex) (changed since it was downloaded?)"
        } catch {
            return "\(file.path) cannot be checked against its checksum: \(CommandLineError.describe(error))"
        }
    }

    /// The message for a name the journal holds for another download: it tells the two apart.
    private static func taken(_ name: String, by holder: DownloadManager.Item, url: URL, checksum: Checksum?) -> String
    {
        var theirs = holder.url.redactedString
        if holder.url == url || theirs == url.redactedString {
            let difference =
                holder.url != url
                ? "its URL differs from this one in its hidden credentials or signature only"
                : holder.checksum.map { "its checksum is \($0)" } ?? "it has no checksum"
            theirs += " (\(difference))"
        }
        return "the file name '\(name)' is already taken by download \(holder.id) of \(theirs) in this folder: use "
            + "--allow-overwrite to replace it, or out=NAME in an input file for another name"
    }

    /// Removes the journal's unfinished items (of `held`, its items when the command began) that
    /// `items` download under another name now: same URL, named by it or by the server (no `out=`),
    /// and a name no item of `items` has. Their `.part`s go with them.
    private static func removeRenamed(
        _ items: [DownloadPlan.Item], held: [DownloadManager.Item], from manager: DownloadManager
    ) {
        guard !held.isEmpty else { return }
        let names = Set(items.map(\.name))
        let renamed = Set(items.filter(\.namedByURL).map(\.url))
        for old in held where renamed.contains(old.url) && !names.contains(old.name) {
            guard old.state != .completed else { continue }
            try? manager.remove(old.id)
        }
    }

    /// The summary's lines and the exit code: only this run's items count.
    private static func report(
        _ outcome: Outcome, total: Int, interrupted: Bool, seconds: Double, options: TransferOptions
    ) -> ExitCode {
        let failed = outcome.failed + outcome.refused.map { ($0.item.path, $0.item.url, $0.message) }
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
                    completed: outcome.completed, failed: failed.count,
                    remaining: total - outcome.completed - failed.count, bytes: outcome.completedBytes,
                    seconds: (seconds * 1000).rounded() / 1000, interrupted: interrupted))
            StandardOutput.write((line ?? "") + "\n")
        }
        for (name, url, message) in failed {
            printError("\(name) (\(url.redactedString)): \(message)")
        }
        if interrupted {
            printError("interrupted: \(outcome.completed) of \(total) files done; run the same command again to resume")
            return CommandLineError.interrupted
        }
        if !failed.isEmpty {
            printError("\(failed.count) of \(total) downloads failed")
            return CommandLineError.failure
        }
        if outcome.completed < total {
            printError("\(total - outcome.completed) of \(total) downloads did not finish")
            return CommandLineError.failure
        }
        if !options.json && !options.quiet {
            StandardOutput.write(summaryLine(outcome, seconds: seconds) + "\n")
        }
        return .success
    }

    /// The last line of a run that succeeded: what was downloaded, and what was complete already (kept, not
    /// fetched again) — `downloaded 2 files (1.5 MB) in 0.31 s; 1 already complete`, or `nothing downloaded: 3
    /// files already complete (4 MB)` when no file needed a request.
    static func summaryLine(_ outcome: Outcome, seconds: Double) -> String {
        func files(_ count: Int) -> String { "\(count) file\(count == 1 ? "" : "s")" }
        let fetched = outcome.completed - outcome.earlier
        guard fetched > 0 || outcome.earlier == 0 else {
            return "nothing downloaded: \(files(outcome.earlier)) already complete "
                + "(\(TransferUnits.bytes(outcome.earlierBytes)))"
        }
        let time = seconds < 10 ? String(format: "%.2f s", seconds) : TransferUnits.duration(seconds)
        return "downloaded \(files(fetched)) (\(TransferUnits.bytes(outcome.completedBytes - outcome.earlierBytes))) "
            + "in \(time)" + (outcome.earlier == 0 ? "" : "; \(outcome.earlier) already complete")
    }

    /// Writes `error: MESSAGE` on standard error, control characters escaped (names, URLs and
    /// reasons come from servers and files) and the secrets of URLs hidden.
    private static func printError(_ message: String) {
        FileHandle.standardError.write(
            Data("error: \(SecretRedaction.redact(message).escapingControlCharacters)\n".utf8))
    }

    private static func printWarning(_ message: String) {
        FileHandle.standardError.write(
            Data("warning: \(SecretRedaction.redact(message).escapingControlCharacters)\n".utf8))
    }
}
