import Dispatch

/// Whose turn it is to write the journal, who waits for a turn, in order, and what waits on the
/// journal's writes: unlinks a failed write left owed, a retry or a sync queued.
///
/// Part of the manager's state machine, behind its one lock: a writer takes the pen under the lock,
/// writes with no lock held, and gives the pen back under the lock with the outcome (a failure leaves
/// the records and the unlinks owed). Given back while others wait, it goes to the first of them
/// (first come, first served), who holds it as it wakes. So no lock is held while the journal is
/// written, and none is taken while another is held: the pen is a turn, not a lock, and nobody waits
/// for it with the lock held (`take` only says whom to wait on).
///
/// It keeps these rules: one holder at a time; the pen is handed on in the order it was asked for;
/// unlinks are handed out only after a write that succeeded, each once, in the order they were owed.
struct JournalPen {
    private(set) var isHeld = false
    /// The writers waiting for a turn, first first.
    private var waiting: [DispatchSemaphore] = []
    /// Unlinks skipped because the journal could not record the change they carry out, and the names
    /// they clean (which stay marked cleaning: nothing of them starts): handed out after the next
    /// write that succeeds.
    private(set) var owedUnlinks: [String] = []
    private(set) var owedCleaning: [String] = []
    /// A retry of a failed journal write is queued and has not started.
    var retryQueued = false
    /// A sync of the journal is queued and has not started.
    var syncQueued = false
    /// The journal was closed (by `close()`, or a test's abandon): nothing is written or synced any more.
    var isClosed = false

    /// Batches of unlinks `wrote` handed out that their caller has not reported done (`unlinked`):
    /// done after the pen is given back, they must be over before the journal lets the directory go.
    private(set) var unlinking = 0
    /// The holder waiting for them (`close()`).
    private var unlinkingWaiter: DispatchSemaphore?

    /// How many writers wait for a turn (for tests).
    var waitingCount: Int { waiting.count }
    /// Whether the holder waits for the unlinks handed out (for tests).
    var awaitsUnlinks: Bool { unlinkingWaiter != nil }

    /// Whether an unlink, or a name it cleans, waits for a write to succeed.
    var owes: Bool { !(owedUnlinks.isEmpty && owedCleaning.isEmpty) }

    /// Asks for the pen. Nil: the caller holds it now. Else what the caller waits on, with no lock
    /// held: it holds the pen once that is signalled.
    mutating func take() -> DispatchSemaphore? {
        guard isHeld else {
            isHeld = true
            return nil
        }
        let turn = DispatchSemaphore(value: 0)
        waiting.append(turn)
        return turn
    }

    /// Gives the pen back. Returns the waiter it goes to (signal it, with no lock held), if any.
    mutating func give() -> DispatchSemaphore? {
        precondition(isHeld, "the journal's pen was given back by nobody who held it")
        guard !waiting.isEmpty else {
            isHeld = false
            return nil
        }
        return waiting.removeFirst()
    }

    /// The holder wrote the journal (`written`: it succeeded, or nothing needed writing) for a change
    /// that asks for `unlinks`, cleaning `cleaning`. Returns what may be unlinked now, and the names
    /// that cleans: everything owed, once a write succeeded; nothing while one fails.
    mutating func wrote(
        succeeded written: Bool, unlinks: [String], cleaning: [String]
    ) -> (unlinks: [String], cleaning: [String]) {
        precondition(isHeld, "the journal was written without its pen")
        owedUnlinks += unlinks
        owedCleaning += cleaning
        guard written else { return ([], []) }
        defer { (owedUnlinks, owedCleaning) = ([], []) }
        if !owedUnlinks.isEmpty { unlinking += 1 }
        return (owedUnlinks, owedCleaning)
    }

    /// A batch of unlinks `wrote` handed out is done. Returns the holder waiting for the last one
    /// (signal it, with no lock held), if any.
    mutating func unlinked() -> DispatchSemaphore? {
        precondition(unlinking > 0, "more unlinks reported done than were handed out")
        unlinking -= 1
        guard unlinking == 0 else { return nil }
        defer { unlinkingWaiter = nil }
        return unlinkingWaiter
    }

    /// The holder waits for the unlinks handed out to be done: nil when none are on their way, else
    /// what to wait on, with no lock held.
    mutating func waitForUnlinks() -> DispatchSemaphore? {
        precondition(isHeld, "only the pen's holder waits for the unlinks")
        guard unlinking > 0 else { return nil }
        let waiter = DispatchSemaphore(value: 0)
        unlinkingWaiter = waiter
        return waiter
    }

    /// The journal is closed: what was owed is handed out (after the final compaction succeeded).
    mutating func takeOwedUnlinks() -> [String] {
        defer { (owedUnlinks, owedCleaning) = ([], []) }
        return owedUnlinks
    }
}
