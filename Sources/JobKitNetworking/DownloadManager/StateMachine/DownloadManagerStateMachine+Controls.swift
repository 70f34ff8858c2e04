import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Controls

    /// Suspends a pending or running item (a running one's run is cancelled, its `.part` kept).
    mutating func suspend(_ id: ItemID, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = items[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        switch entry.phase {
        case .pending, .running: break
        default: return Actions()
        }
        // Too late: its file is complete and taking its name; it ends completed.
        guard !isFinalizing(entry) else { return Actions() }
        var actions = Actions()
        if case .running(let run) = entry.phase { stop(run, of: entry, removingPart: false, into: &actions) }
        actions.merge(transition(id, to: .suspended, now: now))
        record(.state(id.rawValue, .suspended))
        actions.writesJournal = true
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// Queues a suspended, failed or cancelled item again.
    mutating func resume(_ id: ItemID, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard items[id] != nil else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        var actions = requeue(id, now: now)
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Cancels an item that is not completed: its run is cancelled and its `.part` removed.
    mutating func cancel(_ id: ItemID, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = items[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        switch entry.phase {
        case .completed, .cancelled: return Actions()
        default: break
        }
        // Too late: its file is complete and taking its name; it ends completed.
        guard !isFinalizing(entry) else { return Actions() }
        var actions = Actions()
        if case .running(let run) = entry.phase { stop(run, of: entry, removingPart: true, into: &actions) }
        actions.merge(transition(id, to: .cancelled, now: now))
        nameGuard.removePartAfterStoppedRuns(of: entry.name, entry.partFiles)
        actions.merge(nameGuard.clean(entry.name, entry.partFiles))
        record(.state(id.rawValue, .cancelled))
        actions.writesJournal = true
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// Forgets an item: its run is cancelled, its `.part` removed, and its file too when
    /// `deletingFile` and the manager downloaded it.
    mutating func remove(_ id: ItemID, deletingFile: Bool, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = items[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        let removed = item(id, now: now)
        var actions = Actions()
        if case .running(let run) = entry.phase, isFinalizing(entry) {
            // Its file is complete and taking its name: the run is left to end, and then the file is
            // treated as a completed item's (removed when `deletingFile`). The name waits till then.
            nameGuard.removedWhileFinalizing(run: run.generation, of: entry.name, deletingFile: deletingFile)
        } else {
            if case .running(let run) = entry.phase {
                if let handle = run.handle { actions.cancels.append(handle) }
                stop(run, of: entry, removingPart: true, into: &actions)
            }
            if case .completed = entry.phase {
                if deletingFile, entry.ownsFile { actions.merge(nameGuard.clean(entry.name, [entry.name])) }
            } else {
                nameGuard.removePartAfterStoppedRuns(of: entry.name, entry.partFiles)
                // Downloaded again: its old file is the manager's, as a completed item's is.
                let file = deletingFile && entry.previous != nil && entry.ownsFile ? [entry.name] : []
                actions.merge(nameGuard.clean(entry.name, entry.partFiles + file))
            }
        }
        leave(entry)
        items.remove(id)
        keepForCompactions(entry)
        record(DownloadJournal.Record(op: .remove, id: id.rawValue))
        actions.writesJournal = true
        actions.wake(outbox.note(.removed(removed)))
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// A removed item is kept for the compactions while its `.part` may be on disk (its name held until
    /// the unlinks are done): not a completed item's, nor one that never ran here, was restored without
    /// a `.part` and has nothing else to clean under its name (an item removed from a queue before it
    /// started: a `removeAll` of a queue writes no two lines per item again).
    private mutating func keepForCompactions(_ entry: Entry) {
        if case .completed = entry.phase { return }
        guard nameGuard.isHeld(entry.name), entry.mayHavePart || nameGuard.holdCount(of: entry.name) > 1 else {
            return
        }
        removedUncleaned[entry.name] = DownloadJournal.Entry(
            id: entry.id.rawValue, url: entry.url, name: entry.name, checksum: nil, status: .pending)
    }

    /// The unlinks of `names` (an `Actions.cleaning`) are done: what waited for them may start.
    mutating func cleaned(_ names: [String], now: UInt64) -> Actions {
        nameGuard.release(names)
        for name in names where !nameGuard.isHeld(name) { removedUncleaned[name] = nil }
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// Whether the files of `name` are being unlinked.
    func isCleaning(_ name: String) -> Bool { nameGuard.isHeld(name) }

    /// Every item's id, in the order added.
    var ids: [ItemID] { items.ids }

    /// Starts nothing until `releaseStarts`: an operation on every item frees no slot that the
    /// next item takes only to be stopped in turn.
    mutating func holdStarts() { holdsStarts = true }

    /// Starts what the held operations made room for.
    mutating func releaseStarts(now: UInt64) -> Actions {
        holdsStarts = false
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Changes the width; raising it starts pending items now.
    mutating func setLimit(_ newLimit: Int, now: UInt64) -> Actions {
        scheduler.setLimit(newLimit)
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Closes the manager: running items go back to pending (in memory, with an event each; the
    /// journal already says so) and their runs are cancelled, the URL refresher's pending answers dropped; waiters get the summary; nothing starts any more. The
    /// `.part`s that stopped runs were to remove when they end are removed now (by the caller,
    /// before the directory is released): a run ending after `close()` touches no file, since a
    /// new manager may own the directory by then.
    mutating func close(now: UInt64) -> Actions {
        guard !isClosed else { return Actions() }
        var actions = Actions()
        let items = items
        actions.unlinks += nameGuard.close(isHeldAgain: items.holdsPart)
        for id in items.ids {
            guard let entry = items[id], case .running(let run) = entry.phase else { continue }
            if let handle = run.handle { actions.cancels.append(handle) }
            if run.refreshing { actions.dropsRefreshes.append(run.generation) }
            scheduler.runStoppedByClose(host: entry.host, slots: run.slots)
            fold(id, retiring: true)
            self.items.update(id) { $0.phase = .pending(ticket: 0) }
            // An event as every change is: the last update's events replay to its snapshot.
            actions.wake(outbox.note(.changed(item(id, now: now))))
        }
        isClosed = true
        actions.wake(outbox.close())
        let summary = summary(now: now)
        actions.waiters = waiters.takeAll().map { ($0, summary) }
        return actions
    }
}
