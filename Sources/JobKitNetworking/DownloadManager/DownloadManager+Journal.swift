import Dispatch
import Foundation
import JobKit

extension DownloadManager {
    // MARK: Journal

    /// Runs `body` holding the journal's pen (`JournalPen`): no other thread writes the journal until
    /// it returns. The turn is asked for and given back under the state lock; the wait for it, and
    /// `body`, run with no lock held (`body` takes the state lock itself, as it needs).
    func withPen<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        if let turn = state.withLock({ $0.pen.take() }) { turn.wait() }
        defer { state.withLock { $0.pen.give() }?.signal() }
        return try body()
    }

    /// Writes the records waiting in the state machine, in order.
    ///
    /// - Throws: the journal's failure (a full disk): the records stay waiting, to be written before
    ///   the next ones, and the caller does not carry out what they announce. Nothing when closed.
    func writeJournal() throws(DownloadManagerError) {
        try withPen { () throws(DownloadManagerError) in
            guard journal.file != nil else { return }
            try writeJournalHoldingPen()
        }
    }

    /// Writes the waiting records to the journal, and syncs it when the machine owes a sync before the
    /// next unlink (`journalSyncOwed`); the caller holds the pen. A failure leaves both owed.
    ///
    /// - Throws: `.closed` once the journal is closed; the journal's failure.
    func writeJournalHoldingPen() throws(DownloadManagerError) {
        guard let file = journal.file else { throw .closed }
        // A torn end (a failed write whose lines could not be cut back off) is never appended to:
        // the journal is written whole, from what the machine knows.
        let torn = file.isTorn
        let (write, syncs) = state.withLock { machine in
            if torn { machine.journal.oweRewrite() }
            return (machine.takeJournal(), machine.takeJournalSync())
        }
        if let write {
            do {
                try Self.apply(write, to: file)
            } catch {
                state.withLock { machine in
                    machine.untake(write)
                    if syncs { machine.oweJournalSync() }
                }
                throw error
            }
        }
        guard syncs else { return }
        do {
            try file.sync()
        } catch {
            state.withLock { $0.oweJournalSync() }
            throw error
        }
    }

    static func apply(_ write: Machine.JournalWrite, to file: JournalFile) throws(DownloadManagerError) {
        switch write {
        case .append(let records): try file.append(DownloadJournal.encodedChunks(records))
        case .rewrite(let header, let records):
            try file.replace(with: DownloadJournal.encodedChunks(header: header, records))
        }
    }

    /// How long the manager waits before it tries a failed journal write again.
    static let journalRetryDelay = Duration.seconds(1)

    /// A journal write failed (a full disk, say): tries again later, and again while it fails, so
    /// that the records reach the disk and what waits for them — unlinks they announce, items of a
    /// name whose files those remove — goes on once the disk recovers, without another call of the
    /// user's. One retry is queued at a time.
    func retryJournalLater() {
        let first = state.withLock { machine -> Bool in
            defer { machine.pen.retryQueued = true }
            return !machine.pen.retryQueued
        }
        guard first else { return }
        let queue = configuration.queue
        configuration.scheduler.schedule(after: Self.journalRetryDelay) { [weak self] in
            guard let self else { return }
            queue.async { self.retryJournal() }
        }
    }

    private func retryJournal() {
        state.withLock { $0.pen.retryQueued = false }
        writeWaitingJournal()
    }

    /// Writes the records waiting for the journal, and does what waited for them (owed unlinks), as a
    /// transition's actions would; after a write another thread has in flight.
    func writeWaitingJournal() {
        var write = Machine.Actions()
        write.writesJournal = true
        perform(write)
    }

    /// How long a requested sync of the journal waits for more completions to share it.
    static let syncDelay = Duration.milliseconds(50)

    /// With `.system` durability, syncs the journal to disk in the background, at most `syncDelay`
    /// later; requests that arrive before the sync starts share it, so that many completions close
    /// together cost one sync, not one each. A process killed meanwhile loses nothing: the
    /// lines are written already; a power loss could lose a `done`, but not the synced `finishing`
    /// before it, which restores the item as completed. With `.process` nothing is synced.
    func syncJournalSoon() {
        guard configuration.durability == .system else { return }
        let queue = state.withLock { machine -> Bool in
            defer { machine.pen.syncQueued = true }
            return !machine.pen.syncQueued
        }
        guard queue else { return }
        configuration.scheduler.schedule(after: Self.syncDelay) { [self] in
            syncQueue.async { self.syncJournal() }
        }
    }

    private func syncJournal() {
        let open = state.withLock { machine -> Bool in
            machine.pen.syncQueued = false
            return !machine.pen.isClosed
        }
        // A descriptor of its own, not a `dup` of the journal's: a `dup` would share the `flock`,
        // and keep the directory locked past `close()` while the sync runs.
        guard open else { return }
        JournalFile.sync(in: folder)
    }
}
