import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: URLs

    /// Gives an item a new URL (recorded in the journal). A running item's run is stopped and the
    /// item queued again, to start from the new URL once the run has let go of its `.part` (which
    /// it resumes, when the validator proves the new URL serves the same bytes); a pending one is
    /// queued again under its new host. A run whose complete `.part` is already taking its name
    /// is left to finish.
    mutating func replaceURL(_ id: ItemID, with url: URL, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = items[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        try Self.checkDownloadable(url)
        var actions = Actions()
        let restarts: Bool
        switch entry.phase {
        case .pending: restarts = true
        case .running(let run) where !isFinalizing(entry):
            if let handle = run.handle { actions.cancels.append(handle) }
            stop(run, of: entry, removingPart: false, into: &actions)
            restarts = true
        default: restarts = false
        }
        if restarts { leave(entry) }
        items.update(id) {
            $0.url = url
            $0.runsRefreshedURL = false
            if restarts { $0.meter.reset() }
        }
        if restarts { enqueue(id) }
        record(.url(id.rawValue, url))
        actions.writesJournal = true
        actions.wake(outbox.note(.changed(item(id, now: now))))
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Downloads the completed item `id` again, from `url`: it is queued again, and its new file
    /// replaces the old one once complete. Until then its records wait (`record`): the journal keeps
    /// it completed, from its old URL, so a download that fails, is cancelled or is cut short by a
    /// crash leaves the next manager the item as it was. An item that is not completed has no file to
    /// keep: it takes the URL (`replaceURL`) and, when stopped, is queued again.
    mutating func downloadAgain(_ id: ItemID, from url: URL, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = items[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        try Self.checkDownloadable(url)
        var actions: Actions
        if case .completed = entry.phase {
            actions = fetchAgain(id, from: url, now: now)
        } else {
            // Its file is already taking its name: left to finish (the new URL would label old bytes).
            guard !isFinalizing(entry) else { return Actions() }
            actions = try replaceURL(id, with: url, now: now)
            actions.merge(requeue(id, now: now))
        }
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Queues the completed item `id` again, from `url`, its new file to replace the old one; the
    /// journal keeps it completed until then (`record`). Nothing for an item not completed.
    mutating func fetchAgain(_ id: ItemID, from url: URL, now: UInt64) -> Actions {
        guard case .completed(let size) = items[id]?.phase else { return Actions() }
        items.update(id) {
            $0.previous = Entry.Previous(url: $0.url, size: size)
            $0.url = url
            $0.replacesFile = true
            $0.runsRefreshedURL = false
            $0.received = 0
            $0.expected = nil
        }
        enqueue(id)
        var actions = Actions()
        actions.wake(outbox.note(.changed(item(id, now: now))))
        return actions
    }

    /// Run `generation` of the item downloaded again ends failed after its new file's `finishing`
    /// record, and the old file is not under the name any more (a rename over it, then undone: a
    /// failed flush after it): its record is not written back, and the failure is journaled.
    mutating func oldFileLost(_ id: ItemID, generation: UInt64) {
        guard isCurrent(id, generation), items[id]?.previous?.announced == true else { return }
        items.update(id) { $0.previous = nil }
    }

    /// Records `record` for the journal, unless its item replaces a completed download
    /// (`Entry.previous`): the journal keeps that item completed, from its old URL, until its new file
    /// is about to take the name — its `finishing` record, which carries the new URL (one line: no
    /// crash lands between the two) — or it is removed. A failure after that (the rename's, the
    /// journal's) writes the old file's record back: `done` with its size and URL.
    mutating func record(_ record: DownloadJournal.Record) {
        let id = ItemID(rawValue: record.id)
        guard let entry = items[id], let previous = entry.previous, record.op != .remove else {
            return journal.record(record)
        }
        var record = record
        switch record.op {
        case .finishing:
            items.update(id) { $0.previous?.announced = true }
            record.url = entry.url.absoluteString
            journal.record(record)
        case .done:
            items.update(id) { $0.previous = nil }
            journal.record(record)
        case .url where previous.announced:
            journal.record(record)  // the journal has the new file's `finishing`: its URL follows it
        case .state where previous.announced:
            items.update(id) { $0.previous?.announced = false }
            journal.record(
                DownloadJournal.Record(op: .done, id: record.id, url: previous.url.absoluteString, size: previous.size))
        default: break
        }
    }

    /// Whether run `generation`'s refusal (401, 403, 410) may be taken to the URL refresher: it is
    /// the item's current run, and not already one from a refreshed URL that no response has
    /// filled since (a refresher that keeps giving refused URLs fails the item, not a loop).
    func mayRefresh(_ id: ItemID, generation: UInt64) -> Bool {
        guard isCurrent(id, generation), let entry = items[id] else { return false }
        return !entry.runsRefreshedURL && !isClosed
    }

    /// Run `generation`'s refusal is taken to the URL refresher (`mayRefresh` said it may be): the
    /// run waits for the answer holding its slot but no file, so suspending, cancelling or removing
    /// its item, replacing its URL or closing the manager meanwhile takes effect at once and drops
    /// the answer (`Actions.dropsRefreshes`). False: it may not (ask no one; the run ends now).
    mutating func beginRefresh(_ id: ItemID, generation: UInt64) -> Bool {
        guard mayRefresh(id, generation: generation), case .running(var run) = items[id]?.phase else { return false }
        run.refreshing = true
        items.update(id) { $0.phase = .running(run) }
        return true
    }

    /// Whether run `generation` of item `id` waits for the URL refresher's answer, which is still wanted.
    func isRefreshing(_ id: ItemID, generation: UInt64) -> Bool {
        guard case .running(let run) = items[id]?.phase, run.generation == generation else { return false }
        return run.refreshing
    }

    /// The URL refresher answered for run `generation`, which ended with `failure`: with a
    /// downloadable URL, the item takes it (journaled) and is queued again, and its next run may
    /// resume the `.part`; without one (nil, or not http(s)), the run ends failed as it would have.
    /// A run no longer current (the item suspended, cancelled, removed or given a new URL
    /// meanwhile, or the manager closed) ends as a stale run: the answer is dropped (and its stop
    /// held no name: see `beginRefresh`).
    mutating func refreshed(
        _ id: ItemID, generation: UInt64, url: URL?, failure: ItemError, now: UInt64
    ) -> Actions {
        guard isCurrent(id, generation), let entry = items[id] else {
            return staleRunEnded(generation, .failed(failure))
        }
        guard let url else { return runEnded(id, generation: generation, .failed(failure), now: now) }
        if let problem = DownloadURLCheck.problem(with: url) {
            let refused = ItemError(
                kind: failure.kind,
                message: failure.message + "; the URL refresher gave \(url.redactedString): \(problem.reason)",
                status: failure.status)
            return runEnded(id, generation: generation, .failed(refused), now: now)
        }
        var actions = Actions()
        leave(entry)
        items.update(id) {
            $0.url = url
            $0.runsRefreshedURL = true
            $0.meter.reset()
        }
        enqueue(id)
        record(.url(id.rawValue, url))
        actions.writesJournal = true
        actions.wake(outbox.note(.changed(item(id, now: now))))
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Checks that `url` is one the manager downloads (`DownloadURLCheck`): `http` or `https`,
    /// with a host, and no port or one from 1 to 65535.
    ///
    /// - Throws: `.unsupportedURL` or `.invalidURL`, naming the URL (redacted).
    static func checkDownloadable(_ url: URL) throws(DownloadManagerError) {
        switch DownloadURLCheck.problem(with: url) {
        case nil: return
        case .unsupported: throw .unsupportedURL(url.redactedString)
        case let problem?: throw .invalidURL(url.redactedString, reason: problem.reason)
        }
    }
}
