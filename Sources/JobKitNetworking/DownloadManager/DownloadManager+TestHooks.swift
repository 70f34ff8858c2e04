extension DownloadManager {
    /// Points where a test acts in the middle of the manager's work, so that a race it checks
    /// happens every time. They do nothing unless a test sets them.
    struct TestHooks: Sendable {
        /// A transition decided to stop runs, with no lock held, just before they are cancelled.
        var beforeCancel: @Sendable () -> Void = {}
        /// The names the manager is about to unlink (a transition's, `close()`'s or a recovery's),
        /// with no lock held, just before they are.
        var beforeUnlink: @Sendable (_ paths: [String]) -> Void = { _ in }
        /// An item's run recorded `finishing` (its `.part` is complete and verified), just before
        /// the `.part` is renamed to the item's name.
        var afterFinishing: @Sendable (_ id: ItemID) -> Void = { _ in }
        /// Run `generation` of the item named `name` starts its download (`started`), or that download
        /// ended and its result reached the manager, wanted or not.
        var runBoundary: @Sendable (_ name: String, _ generation: UInt64, _ started: Bool) -> Void = { _, _, _ in }
        /// Asked before each write, sync or rewrite of the journal: an `errno` makes it fail as if
        /// the disk had (ENOSPC, EIO); nil lets it happen.
        var journalFailure: @Sendable () -> Int32? = { nil }
        /// The bytes a `.part` is written between two flushes with `.system` durability
        /// (`PartFile.syncInterval`), shorter in a test so that a small file is flushed midway.
        var partSyncInterval = PartFile.syncInterval
        /// The records appended after which the journal is written whole again (`JournalBuffer`),
        /// smaller in a test so that a short run compacts it.
        var journalCompactionThreshold = 1024
        /// A split's smallest segment and the bytes between two writes of its map
        /// (`SegmentedDownload.minimumSegmentSize`), smaller in a test so that small files split.
        var segmentSize = SegmentedDownload.minimumSegmentSize
        /// Where the URL refresher's tasks run (nil: the global executor); a simulation's runs them on
        /// the simulated process's queue.
        var taskExecutor: (any TaskExecutor)?
    }
}

extension DownloadManager {
    /// Stops as a crash would: the journal is closed as it is (nothing more is written, nothing is
    /// compacted) and the runs are cancelled, so that a new manager can open the directory.
    func abandonForTesting() {
        withPen {
            journal.file?.close()
            journal.file = nil
            state.withLock { $0.pen.isClosed = true }
        }
        let actions = state.withLock { $0.close(now: now()) }
        for handle in actions.cancels { handle.cancel() }
        for (waiter, summary) in actions.waiters { waiter.resume(returning: summary) }
    }
}
