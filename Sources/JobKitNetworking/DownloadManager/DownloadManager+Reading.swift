extension DownloadManager {
    /// Every item now, in the order added.
    public var items: [Item] {
        state.withLock { machine in machine.ids.map { machine.item($0, now: now()) } }
    }

    /// The item `id` now, or nil if there is none.
    public func item(_ id: ItemID) -> Item? {
        state.withLock { $0.itemIfAny(id, now: now()) }
    }

    /// Every item added up, now.
    public var totals: Totals {
        state.withLock { $0.summary(now: now()).totals }
    }

    /// Suspends until nothing is pending, running or verifying — at once if nothing is — and
    /// returns where every item ended up. Returns early, with the summary then, when the manager is
    /// closed or the awaiting task is cancelled.
    ///
    /// Every record of what it reports is written to the journal by then (not necessarily synced:
    /// see `Durability`), unless the journal cannot be written (a full disk: the write is tried
    /// again every second): a process that exits right after keeps every completion.
    public func waitUntilFinished() async -> Summary {
        let summary = await drained()
        // The last changes' records may still be on their way to the journal: recorded by the thread
        // that made them, which writes them next (or writing them now). The write waits for that
        // one, then writes what is left — on the manager's queue, not blocking this task's thread.
        await withCheckedContinuation { (written: CheckedContinuation<Void, Never>) in
            configuration.queue.async { [self] in
                writeWaitingJournal()
                written.resume()
            }
        }
        return summary
    }

    private func drained() async -> Summary {
        let waiter = state.withLock { $0.makeWaiterID() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if let summary = state.withLock({ $0.addWaiter(waiter, continuation, now: now()) }) {
                    continuation.resume(returning: summary)
                }
            }
        } onCancel: {
            if let (continuation, summary) = state.withLock({ $0.cancelWaiter(waiter, now: now()) }) {
                continuation.resume(returning: summary)
            }
        }
    }
}
