import Foundation
import JobKit

extension DownloadManager {
    // MARK: URLs

    /// The statuses that ask `Configuration.urlRefresher` for a new URL: 401, 403 and 410, what an
    /// expired signed URL gets.
    public static let refreshableStatuses: Set<Int> = [401, 403, 410]

    /// Gives an item a new URL — a signed URL refreshed, a mirror — keeping its `.part`: the item,
    /// not its URL, owns the partial file, so the next run resumes it from the new URL when the
    /// server proves with the validator (ETag or Last-Modified, sent in `If-Range` and checked on
    /// the answer) that it serves the same bytes, and starts over when it does not. The journal
    /// records the new URL: a restore fetches from it.
    ///
    /// A pending item is queued again under its new host; a running one is stopped and queued
    /// again (behind the items already pending), starting once its run has let go of the `.part`;
    /// a suspended, failed, cancelled or completed one only takes the URL, for its next run
    /// (`resume`). A running item whose complete `.part` is already taking its name is left to
    /// finish. Headers (`Request.headers`) go with the new URL's requests too.
    ///
    /// ```swift
    /// try manager.replaceURL(id, with: freshlySignedURL)
    /// ```
    ///
    /// - Throws: `DownloadManagerError.unknownItem`, `.closed`, `.unsupportedURL` for a URL that
    ///   is not http(s) with a host; `.cannotUseDirectory` when the journal cannot be written (the
    ///   change holds in memory and is written with the next record).
    public func replaceURL(_ id: ItemID, with url: URL) throws(DownloadManagerError) {
        try control { machine, now throws(DownloadManagerError) in try machine.replaceURL(id, with: url, now: now) }
    }

    /// Downloads a completed item again, from `url` (the same URL, or another: a new version, a
    /// mirror), replacing its file once the new one is complete — what `jobkit download
    /// --allow-overwrite` does to a completed download of another URL under the same name.
    ///
    /// The old file stays under the name until the new one takes it, and the journal keeps the item
    /// completed, from its old URL, until then: a download that fails or is cancelled shows so while
    /// this manager runs, and the next manager (after a close or a crash) restores the item completed,
    /// with its file, as it was. An item that is not completed has no file to keep: it takes the URL
    /// as `replaceURL` gives it (its `.part` resumes only when the server's validator proves the same
    /// bytes) and, when suspended, failed or cancelled, is queued again. The item keeps its id, name
    /// and checksum (a different checksum is another download: remove the item and add it).
    ///
    /// ```swift
    /// try manager.downloadAgain(id, from: newVersionURL)
    /// ```
    ///
    /// - Throws: `DownloadManagerError.unknownItem`, `.closed`, `.unsupportedURL` or `.invalidURL`
    ///   for a URL that is not http(s) with a host; `.cannotUseDirectory` when the journal cannot be
    ///   written (an item that was not completed: the change holds in memory).
    public func downloadAgain(_ id: ItemID, from url: URL) throws(DownloadManagerError) {
        try control { machine, now throws(DownloadManagerError) in try machine.downloadAgain(id, from: url, now: now) }
    }

    /// A run ended with `failure`: when it is a 401, 403 or 410 and a refresher is configured (and
    /// may be asked for this run), asks it, and returns true: the run's end is reported once it
    /// answers. False: report the end now.
    ///
    /// The refresher runs in a task of its own, kept in the machine's `refreshTasks` until it answers:
    /// stopping the item meanwhile, or closing the manager, cancels it (`dropRefreshes`) and drops its
    /// answer.
    func refreshesURL(_ start: Machine.Start, after failure: ItemError) -> Bool {
        guard let refresher = configuration.urlRefresher, let status = failure.status,
            failure.kind == .httpStatus, Self.refreshableStatuses.contains(status)
        else { return false }
        let item = state.withLock { machine -> Item? in
            guard machine.beginRefresh(start.id, generation: start.generation) else { return nil }
            return machine.item(start.id, now: now())
        }
        guard let item else { return false }
        DownloadLog.logger(configuration.logger, for: start).debug(
            "asking the URL refresher for a new URL", metadata: ["http.status": "\(status)"])
        let generation = start.generation
        let task = Task(executorPreference: configuration.testHooks.taskExecutor) { [self] in
            let url = await refresher(item, status)
            perform(
                state.withLock {
                    $0.refreshTasks[generation] = nil
                    return $0.refreshed(start.id, generation: generation, url: url, failure: failure, now: now())
                })
        }
        // Dropped before it was kept (or answered already): no one else cancels it.
        let dropped = state.withLock { machine in
            machine.refreshTasks[generation] = task
            return !machine.isRefreshing(start.id, generation: generation)
        }
        if dropped { dropRefreshes([generation]) }
        return true
    }

    /// Cancels the URL refresher's tasks for runs `generations`, whose answers are dropped.
    func dropRefreshes(_ generations: [UInt64]) {
        guard !generations.isEmpty else { return }
        let tasks = state.withLock { machine in generations.compactMap { machine.refreshTasks.removeValue(forKey: $0) }
        }
        for task in tasks { task.cancel() }
    }
}
