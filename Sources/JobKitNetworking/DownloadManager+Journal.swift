import Dispatch
import Foundation
import JobKit

extension DownloadManager {
    // MARK: Journal

    /// Writes the records waiting in the state machine, in order.
    func writeJournal() {
        journal.withLock { box in
            guard let file = box.file, let write = state.withLock({ $0.takeJournal() }) else { return }
            // A journal that cannot be written (a full disk) does not stop the downloads; the next
            // manager rewrites it from what it holds.
            try? Self.apply(write, to: file)
        }
    }

    static func apply(_ write: Machine.JournalWrite, to file: JournalFile) throws(DownloadManagerError) {
        switch write {
        case .append(let records): try file.append(DownloadJournal.encode(records))
        case .rewrite(let header, let records): try file.replace(with: DownloadJournal.encode(header: header, records))
        }
    }

    /// How long a requested sync of the journal waits for more completions to share it.
    static let syncDelay = DispatchTimeInterval.milliseconds(50)

    /// With `.system` durability, syncs the journal to disk in the background, at most `syncDelay`
    /// later; requests that arrive before the sync starts share it (200 small files completing in
    /// under a second cost a dozen syncs, not 200). A process killed meanwhile loses nothing: the
    /// lines are written already; a power loss could lose a `done`, but not the synced `finishing`
    /// before it, which restores the item as completed. With `.process` nothing is synced.
    func syncJournalSoon() {
        guard configuration.durability == .system else { return }
        let queue = syncQueued.withLock { queued -> Bool in
            defer { queued = true }
            return !queued
        }
        guard queue else { return }
        syncQueue.asyncAfter(deadline: .now() + Self.syncDelay) { [self] in
            syncQueued.withLock { $0 = false }
            // A descriptor of its own, not a `dup` of the journal's: a `dup` would share the `flock`,
            // and keep the directory locked past `close()` while the sync runs.
            guard let path = journal.withLock({ $0.file?.path }) else { return }
            JournalFile.sync(path: path)
        }
    }
}
