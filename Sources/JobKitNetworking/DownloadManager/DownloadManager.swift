import AsyncHTTPClient
import Dispatch
import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Downloads into one directory, at most a few at once, with per-item and total progress, and a
/// journal in the directory that survives the process: a new manager on the same directory picks
/// up where a killed one stopped.
///
/// **Threading.** Every method may be called from any thread, `onUpdate` included; none waits for
/// the network or the result queue. `add` writes the journal before it returns (and syncs it with
/// `.system` durability, a few milliseconds: add many at once with `add(contentsOf:)`); the other
/// controls write a line without syncing. `onUpdate` runs on the main queue, typed `@MainActor` — or on
/// the `resultQueue` given to `init(directory:configuration:resultQueue:onUpdate:)`, typed `@Sendable` —
/// one call at a time (even on a concurrent queue), never with a lock of the manager held. At most one
/// delivery waits on the result queue: a busy queue gets one update with every event since the
/// last one (events are never dropped) and the newest snapshot; progress alone is delivered at
/// most once per `progressInterval`. The manager is retained by its running downloads.
///
/// ```swift
/// let manager = try DownloadManager(directory: folder) { update in   // on the main actor
///     for event in update.events {
///         if case .changed(let item) = event { print(item.name, item.state) }
///     }
///     print("\(update.totals.received) bytes at \(Int(update.totals.bytesPerSecond)) B/s")
/// }
/// try manager.add(url)                                                 // name: the URL's last component
/// try manager.add(other, name: "other.iso", checksum: Checksum(parsing: "sha-256=…"))
/// let summary = await manager.waitUntilFinished()
/// for item in summary.failed { print(item.name, item.state) }          // "failed: HTTP 404 Not Found for …"
/// ```
///
/// **Items.** Each item is a URL downloaded to `directory/name` through `Job<URL>.download` (a
/// `.part` beside it, validated resume, atomic rename), retried on transient failures
/// (`Configuration.retry`). At most `maxConcurrent` run at once, and at most `maxPerHost` to one
/// host; pending items start in the order they were added (or resumed). `suspend`, `resume`,
/// `cancel` and `remove` act on one item, the `…All` forms on every item. A name is one plain file
/// name of the directory, taken by one item: adding the same URL, name and checksum again returns
/// the existing item (and queues it again if it had failed or was cancelled).
///
/// **Files.** The manager removes only what it made: an item's `.part` and `.part.meta` (when it is
/// cancelled or removed, or its checksum did not match), and a file it downloaded when
/// `remove(_:deletingFile:)` asks. Nothing of a name starts while files of that name are being
/// removed, so a removal never takes a resumed or re-added item's new `.part`. Once an item's
/// complete `.part` is taking its name, `cancel` and `suspend` are too late (it ends completed). A directory where the file should go fails that item only (and
/// stays); so does a file the manager did not download, also one that appears while the item runs
/// (the rename never replaces), unless the request has `replacesExistingFile`. Every file operation
/// is relative to the directory's descriptor, for names that are one entry of it.
///
/// **Journal.** `.jobkit-downloads.journal` (JSON lines, versioned, described in the DocC article)
/// records adds, state changes and completions — not progress, which the `.part` holds. The manager
/// holds an exclusive `flock` on it: a second manager on the directory, in this process or another,
/// fails with `DownloadManagerError.directoryInUse` (after trying for a quarter of a second). On
/// open, completed items whose file still has its recorded size stay completed (not fetched again);
/// a missing one is fetched again; pending, running and suspended items come back as pending (or
/// suspended), and a partial `.part` resumes through the validated resume.
///
/// **Durability.** `Configuration.durability`: `.process` (the default) survives the process being
/// killed or crashing at any moment, with no `fsync`; `.system` also survives a power loss or an
/// operating-system crash, syncing each file, its folder and the journal (see `Durability`).
///
/// **Closing.** `close()` stops the running downloads and releases the directory. A manager that
/// is simply released finishes its running downloads first.
public final class DownloadManager: Sendable {
    /// The directory the files go to (and the journal is in).
    public let directory: URL
    /// How the manager was configured.
    public let configuration: Configuration
    /// Where `onUpdate` runs and the consumers of `updates()` are fed from: the main queue, or the
    /// queue given to `init(directory:configuration:resultQueue:onUpdate:)`.
    public let resultQueue: DispatchQueue
    /// The journal's file.
    public var journalURL: URL { directory.appendingPathComponent(DownloadJournal.fileName, isDirectory: false) }

    /// Problems found in the journal when the manager opened it, one line each (`line 2: item 1
    /// was dropped: invalid file name '../x': …`): records refused as input (a name that is not one
    /// plain file name, a URL that is not http(s), a size out of range) and dropped with their items.
    /// The journal is input, not truth: a planted or corrupt one never makes the manager write
    /// outside its directory. Empty when the journal was sound.
    public let journalProblems: [String]

    /// The directory, open: every file operation goes through it (see `DownloadFolder`; on the
    /// real file system a `DirectoryHandle`).
    let folder: any DownloadFolder
    let transport: any HTTPTransport
    /// The AsyncHTTPClient the manager made for itself (no `transport` given): shut
    /// down when the manager is released, which its running downloads prevent.
    let ownedHTTPClient: HTTPClient?
    /// Nil: none (`init(directory:configuration:updateHandler:)`).
    let onUpdate: (@Sendable (Update) -> Void)?
    /// The consumers of `updates()`, whose state is in `state`'s machine (`consumers`).
    let broadcaster: UpdateBroadcaster<Machine>
    let state: LockedBox<DownloadManagerStateMachine<JobHandle>>
    /// The speed limits, overall and per item.
    let limiter: BandwidthLimiter<ItemID>
    /// The journal, written by the holder of the pen (`DownloadManagerStateMachine.pen`) alone.
    let journal: JournalBox
    /// Where the journal's background syncs run, one at a time, on the manager's queue (a test's
    /// serial queue runs them in its order with everything else).
    let syncQueue: DispatchQueue

    /// Opens `directory` (creating it if missing), restores the items of its journal, and starts
    /// the pending ones; `onUpdate` runs on the main queue, typed `@MainActor`, so a main-actor screen
    /// updates itself in it as written.
    ///
    /// - Parameters:
    ///   - directory: where the files go; the manager keeps its journal there.
    ///   - configuration: width, per-host limit, retry policy, progress interval.
    ///   - onUpdate: the events and progress, on the main queue (see the threading contract above).
    ///     Restored items are reported first, with their states.
    /// - Throws: `DownloadManagerError.directoryInUse` when another manager has the directory open;
    ///   `.unsupportedJournal` for a journal of a newer version (left as it is); `.cannotUseDirectory`
    ///   when the directory or its journal cannot be made, read or written.
    public convenience init(
        directory: URL, configuration: Configuration = Configuration(),
        onUpdate: @escaping @MainActor @Sendable (Update) -> Void = { _ in }
    ) throws(DownloadManagerError) {
        try self.init(directory: directory, configuration: configuration, updateHandler: onUpdate)
    }

    /// Opens `directory` as `init(directory:configuration:onUpdate:)` does, with `onUpdate` on
    /// `resultQueue`, a queue the caller names: a `@Sendable` handler.
    ///
    /// - Parameters:
    ///   - directory: where the files go; the manager keeps its journal there.
    ///   - configuration: width, per-host limit, retry policy, progress interval.
    ///   - resultQueue: where `onUpdate` runs, and where the consumers of `updates()` are fed from.
    ///   - onUpdate: the events and progress, on `resultQueue`. Restored items are reported first.
    /// - Throws: as `init(directory:configuration:onUpdate:)`.
    public convenience init(
        directory: URL, configuration: Configuration = Configuration(), resultQueue: DispatchQueue,
        onUpdate: @escaping @Sendable (Update) -> Void = { _ in }
    ) throws(DownloadManagerError) {
        try self.init(
            directory: directory, configuration: configuration, resultQueue: resultQueue, updateHandler: onUpdate)
    }

    /// `init(directory:configuration:onUpdate:)`; with `updateHandler` nil there is no `onUpdate` (see
    /// `init(directory:configuration:resultQueue:updateHandler:)`).
    package convenience init(
        directory: URL, configuration: Configuration, updateHandler: (@MainActor @Sendable (Update) -> Void)?
    ) throws(DownloadManagerError) {
        try self.init(
            directory: directory, configuration: configuration, resultQueue: mainQueue,
            updateHandler: updateHandler.map { MainQueueCall.nonisolated($0) })
    }

    /// `init(directory:configuration:resultQueue:onUpdate:)`; with `updateHandler` nil there is no
    /// `onUpdate`, and a delivery that no consumer of `updates()` takes either is not built: its events
    /// are dropped, no snapshot of the items is made and no speed is noted (`jobkit download --quiet`
    /// shows nothing; `item(_:)` and the summary then give no speed for a running item).
    package init(
        directory: URL, configuration: Configuration, resultQueue: DispatchQueue,
        updateHandler onUpdate: (@Sendable (Update) -> Void)?
    ) throws(DownloadManagerError) {
        self.resultQueue = resultQueue
        let (root, directory) = (directory.standardizedFileURL, configuration.directory(under: directory))
        self.directory = directory
        self.configuration = configuration
        self.onUpdate = onUpdate
        syncQueue = DispatchQueue(label: "JobKitNetworking.DownloadManager.journal", target: configuration.queue)
        let folder = try JournalFile.openFolder(
            root, subfolder: configuration.subfolder, fileSystem: configuration.fileSystem)
        self.folder = folder
        let (file, contents) = try JournalFile.open(
            in: folder, durability: configuration.durability, injectedFailure: configuration.testHooks.journalFailure)
        let recovery = JournalRecovery(contents: contents, facts: { folder.facts($0) })
        journalProblems = recovery.contents.problems
        // The journal read may not all be on disk yet, nor its name (a rewrite whose folder was not
        // flushed): both are, before the unlinks it justifies (a `.part` gone while the disk's last word
        // is still `finishing` would give the item whatever file of that size is under the name; one
        // gone while it still has the item waiting, a power loss would bring the item back without it).
        if !recovery.unlinks.isEmpty { try file.syncWithFolder() }
        Self.unlink(recovery.unlinks, in: folder, hooks: configuration.testHooks)
        // The journal is rewritten from what it said before anything runs: torn lines go.
        try file.replace(with: recovery.journal)
        // Made once nothing can throw: an AsyncHTTPClient must be shut down before it is released.
        if let transport = configuration.httpTransport ?? configuration.transport {
            self.transport = transport
            ownedHTTPClient = nil
        } else {
            let http = DownloadHTTPClient.make(
                tls: configuration.tlsConfiguration, httpVersion: configuration.httpVersion)
            transport = ManagedClientTransport(
                client: .asyncHTTPClient(http), silenceLimit: configuration.readSilenceLimit)
            ownedHTTPClient = http
        }
        var machine = DownloadManagerStateMachine<JobHandle>(
            directory: directory, limit: configuration.maxConcurrent, perHost: configuration.maxPerHost,
            interval: configuration.progressInterval, window: configuration.speedWindow,
            startsRestored: configuration.startsRestoredItems)
        // Nothing to deliver to until a consumer of `updates()` comes (it starts from a snapshot).
        machine.outbox.keepsEvents = onUpdate != nil
        machine.journal = JournalBuffer(compactionThreshold: configuration.testHooks.journalCompactionThreshold)
        let actions = machine.restore(
            recovery.contents, partLengths: recovery.partLengths, now: Self.now(configuration.scheduler))
        state = .make(machine)
        broadcaster = UpdateBroadcaster(state: state, machine: \.consumers)
        limiter = BandwidthLimiter(overall: configuration.maxBytesPerSecond, scheduler: configuration.scheduler)
        journal = JournalBox(file: file)
        perform(actions)
    }

    // MARK: Adding

    /// Adds one download; see `add(contentsOf:)`.
    ///
    /// - Parameters:
    ///   - url: an `http` or `https` URL.
    ///   - name: the file name in the directory; nil: the URL's last path component.
    ///   - checksum: the digest the file must have; a mismatch fails the item and removes the file.
    /// - Returns: the new item's id (or the existing item's, for the same URL, name and checksum).
    @discardableResult
    public func add(_ url: URL, name: String? = nil, checksum: Checksum? = nil) throws(DownloadManagerError)
        -> ItemID
    {
        try add(contentsOf: [Request(url: url, name: name, checksum: checksum)])[0]
    }

    /// Adds downloads, all or none: every request is checked first, then all are recorded in the
    /// journal with one write (and one sync, with `.system` durability), and they start as slots
    /// free up.
    ///
    /// A request with the URL, name and checksum of an item the manager already has is that item:
    /// its id is returned, and a failed or cancelled one is queued again (a completed one is not
    /// fetched again).
    ///
    /// - Returns: the ids, one per request, in order.
    /// - Throws: `DownloadManagerError.unsupportedURL`, `.invalidName` (empty, `..`, a `/`, a name
    ///   kept for the journal or a `.part`), `.nameTaken` (by another URL or checksum), `.closed`,
    ///   or `.cannotUseDirectory` when the journal cannot be written. Nothing is added then.
    @discardableResult
    public func add(contentsOf requests: [Request]) throws(DownloadManagerError) -> [ItemID] {
        // The journal's end is torn and rewriting it failed too: the journal retry rewrites it.
        var rewriteOwed = false
        // With the journal's pen from the checks to the commit: the controls that could undo what
        // `prepare` found (remove the item a request is, say) take it too, so none comes in between.
        let result = withPen { () -> Result<([ItemID], Machine.Actions), DownloadManagerError> in
            guard let file = journal.file else { return .failure(.closed) }
            do throws(DownloadManagerError) {
                let prepared = try state.withLock { machine in
                    Result { () throws(DownloadManagerError) in try machine.prepare(requests) }
                }.get()
                // Records of earlier changes go first, in order.
                try writeJournalHoldingPen()
                // All or nothing: lines whose sync failed are cut back off, so no restart honours them.
                if prepared.contains(where: \.isNew) {
                    do throws(DownloadManagerError) {
                        try file.appendSynced(DownloadJournal.encodedChunks(Machine.records(of: prepared)))
                    } catch {
                        // Its lines are still there when they could not be cut back off: the journal is
                        // written whole now, without them (else by the journal retry, or the next write),
                        // so that no restart restores what this call refused — nor reuses their ids.
                        if file.isTorn {
                            do throws(DownloadManagerError) {
                                try writeJournalHoldingPen()
                            } catch {
                                rewriteOwed = true
                            }
                        }
                        throw error
                    }
                }
                return .success(state.withLock { $0.commit(prepared, now: now()) })
            } catch {
                return .failure(error)
            }
        }
        if rewriteOwed { retryJournalLater() }
        let (ids, actions) = try result.get()
        // Before any of them starts.
        for (id, request) in zip(ids, requests) { limiter.setLimit(request.maxBytesPerSecond, for: id) }
        _ = perform(actions)
        return ids
    }

    /// Makes room for `count` items about to be added in several batches (`jobkit download` adds a
    /// long list 8,192 at a time): the item table grows once, not by doubling along the way.
    package func reserveCapacity(forAdding count: Int) {
        state.withLock { $0.items.reserve(count) }
    }

    // MARK: Controls

    /// Suspends a pending or running item: it stops, keeping its `.part`, until `resume`. Does
    /// nothing for an item in another state, or one whose complete `.part` is already taking its
    /// name (that item ends completed).
    ///
    /// - Throws: `DownloadManagerError.unknownItem`, `.closed`; `.cannotUseDirectory` when the
    ///   journal cannot be written (the change holds in memory and is written with the next record).
    public func suspend(_ id: ItemID) throws(DownloadManagerError) {
        try control { machine, now throws(DownloadManagerError) in try machine.suspend(id, now: now) }
    }

    /// Queues a suspended, failed or cancelled item again (a partial `.part` resumes where it ends).
    /// An item whose run was just stopped starts once that run has let go of its `.part`. Does
    /// nothing for a pending, running or completed item.
    ///
    /// - Throws: `DownloadManagerError.unknownItem`, `.closed`.
    public func resume(_ id: ItemID) throws(DownloadManagerError) {
        try control { machine, now throws(DownloadManagerError) in try machine.resume(id, now: now) }
    }

    /// Cancels an item that is not completed: it stops and its `.part` is removed; it stays in the
    /// list as `cancelled` (`resume` starts it over). Does nothing for a completed item, nor for one
    /// whose complete (and verified) `.part` is already taking its name: the cancel is too late, and
    /// the item ends completed with its file, as if it had arrived a moment earlier.
    ///
    /// - Throws: `DownloadManagerError.unknownItem`, `.closed`; `.cannotUseDirectory` when the
    ///   journal cannot be written: the item is cancelled, but its `.part` is left until the record
    ///   is written (journal first: a crash must not find a `.part` gone that the journal still resumes).
    public func cancel(_ id: ItemID) throws(DownloadManagerError) {
        try control { machine, now throws(DownloadManagerError) in try machine.cancel(id, now: now) }
    }

    /// Removes an item from the manager (and its journal): a running one stops, and its `.part` is
    /// removed. A completed item's file stays, unless `deletingFile` is true (then it is removed if
    /// the manager downloaded it and it still has the size it was downloaded with: a file changed
    /// since is the user's, as on a restore, and stays). Its name is free again: an item added under
    /// it starts once the removed item's files are gone.
    ///
    /// An item whose complete `.part` is already taking its name is not stopped: it is removed
    /// from the list at once, and its file is then treated as a completed item's (removed only
    /// when `deletingFile` is true).
    ///
    /// - Throws: `DownloadManagerError.unknownItem`, `.closed`; `.cannotUseDirectory` when the
    ///   journal cannot be written: the item is removed from the list, but no file is unlinked until
    ///   the record is written (a crash would otherwise bring the item back with its files gone).
    public func remove(_ id: ItemID, deletingFile: Bool = false) throws(DownloadManagerError) {
        let deleting = deletingFile && mayDeleteFile(of: id)
        try control { machine, now throws(DownloadManagerError) in
            try machine.remove(id, deletingFile: deleting, now: now)
        }
        limiter.setLimit(nil, for: id)
    }

    /// Suspends every pending and running item.
    public func suspendAll() {
        all { machine, id, now throws(DownloadManagerError) in try machine.suspend(id, now: now) }
    }

    /// Queues every suspended, failed and cancelled item again.
    public func resumeAll() {
        all { machine, id, now throws(DownloadManagerError) in try machine.resume(id, now: now) }
    }

    /// Cancels every item that is not completed.
    public func cancelAll() {
        all { machine, id, now throws(DownloadManagerError) in try machine.cancel(id, now: now) }
    }

    /// Removes every item; see `remove(_:deletingFile:)`.
    public func removeAll(deletingFiles: Bool = false) {
        let kept = deletingFiles ? Set(state.withLock { $0.ids }.filter { !mayDeleteFile(of: $0) }) : []
        all { machine, id, now throws(DownloadManagerError) in
            try machine.remove(id, deletingFile: deletingFiles && !kept.contains(id), now: now)
        }
        limiter.removeItemLimits()
    }

    /// Changes the width, effective at once: raising it starts pending items now; lowering it lets
    /// running ones finish. Below 1 counts as 1.
    public func setMaxConcurrent(_ maxConcurrent: Int) {
        _ = perform(state.withLock { $0.setLimit(maxConcurrent, now: now()) })
    }

    /// The current width.
    public var maxConcurrent: Int { state.withLock { $0.limit } }

    // MARK: Closing

    deinit {
        // Every delivery holds the manager: none is left to come, so the consumers end now.
        broadcaster.finish()
        ownedHTTPClient?.shutdown(queue: .global()) { _ in }
    }

    /// Stops the manager: running downloads are cancelled (their `.part`s stay, and the journal
    /// keeps them pending for the next manager), the `.part`s of cancelled items are removed, the
    /// journal is compacted and closed, and the directory is free for another manager when this
    /// returns: a stopped run that reports its end later touches no file. The URL refresher's tasks
    /// that have not answered are cancelled, and their answers dropped. Waiters get the summary; every
    /// method that changes items then throws `.closed`. Updates already queued are still delivered.
    /// Calling it again does nothing.
    public func close() {
        // With the journal's pen: an `add` between its checks and its commit ends first (its items
        // are in the final update and the compaction), and so does a control; no write comes after.
        // Nil `owed`: the final compaction failed (or another call closed the journal first).
        let (actions, owed) = withPen { () -> (Machine.Actions, [String]?) in
            let actions = state.withLock { $0.close(now: now()) }
            // Unlinks a write allowed, done by its caller once it gave the pen back, end before the
            // directory is let go: none comes after `close()` returns.
            if let unlinks = state.withLock({ $0.pen.waitForUnlinks() }) { unlinks.wait() }
            guard let file = journal.file else { return (actions, nil) }
            let compacted: Bool
            do {
                try Self.apply(state.withLock { $0.compacted() }, to: file)
                compacted = true
            } catch {
                compacted = false
            }
            file.close()
            journal.file = nil
            return (
                actions,
                state.withLock { machine in
                    machine.pen.isClosed = true
                    return compacted ? machine.pen.takeOwedUnlinks() : nil
                }
            )
        }
        // The final delivery: it ends the consumers of `updates()`, after the events so far.
        schedule(actions.wake)
        // A cancelled run that ends at once finds the journal closed: it writes and unlinks nothing.
        for handle in actions.cancels { handle.cancel() }
        dropRefreshes(actions.dropsRefreshes)
        // Journal first: the `.part`s of cancelled items go only once the journal says they are cancelled.
        if let owed { Self.unlink(owed + actions.unlinks, in: folder, hooks: configuration.testHooks) }
        for (waiter, summary) in actions.waiters { waiter.resume(returning: summary) }
    }

    /// Unlinks `names` in `folder`, telling the test hook first (a transition's, `close()`'s or a
    /// recovery's unlinks, with no lock held).
    static func unlink(_ names: [String], in folder: any DownloadFolder, hooks: TestHooks) {
        guard !names.isEmpty else { return }
        hooks.beforeUnlink(names)
        for name in names { folder.unlink(name) }
    }
}
