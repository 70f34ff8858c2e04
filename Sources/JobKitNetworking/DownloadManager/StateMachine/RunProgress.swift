import Atomics

/// The bytes runs counted that the manager's state has not taken yet, and whether a delivery will
/// show them: shared by a manager's runs, read and written without the manager's lock.
///
/// A body chunk adds to its run's `RunProgress` and to `unfolded` with two atomic additions; it takes
/// the manager's lock only when no delivery is waiting to show progress, at most once per delivery.
/// A delivery says it no longer waits (`setDeliveryWaiting(false)`, under the lock) before it reads
/// the counts, and a chunk adds before it asks (both sequentially consistent): a chunk that found a
/// delivery waiting is in the counts that delivery reads.
final class ProgressTally: Sendable {
    /// Counted by runs and not yet folded into the state (`DownloadManagerStateMachine.fold`).
    fileprivate let unfolded = ManagedAtomic<Int64>(0)
    /// A delivery is waiting that will read the counts (the outbox's progress changed).
    fileprivate let deliveryWaits = ManagedAtomic<Bool>(false)

    /// Set when the outbox notes progress, cleared when a delivery begins (under the manager's lock).
    func setDeliveryWaiting(_ waits: Bool) {
        deliveryWaits.store(waits, ordering: .sequentiallyConsistent)
    }

    /// What every run counted and the state has not taken.
    var unfoldedBytes: Int64 { unfolded.load(ordering: .sequentiallyConsistent) }
}

/// The bytes one run wrote since the manager's state last took them: counted on the transport's
/// thread, without the manager's lock (see `ProgressTally`).
final class RunProgress: Sendable, Equatable {
    private let tally: ProgressTally
    private let count = ManagedAtomic<Int64>(0)

    init(tally: ProgressTally) { self.tally = tally }

    /// Counts `bytes` more; true when the manager must be told (no delivery is waiting to show them).
    func add(_ bytes: Int) -> Bool {
        let bytes = Int64(clamping: max(bytes, 0))
        Self.add(bytes, to: count)
        Self.add(bytes, to: tally.unfolded)
        return !tally.deliveryWaits.load(ordering: .sequentiallyConsistent)
    }

    /// What the run counted and the state has not taken.
    var bytes: Int64 { count.load(ordering: .sequentiallyConsistent) }

    /// Takes what the run counted (the state adds it to its item): the count starts again at 0.
    func take() -> Int64 {
        let taken = count.exchange(0, ordering: .sequentiallyConsistent)
        Self.add(-taken, to: tally.unfolded)
        return taken
    }

    static func == (lhs: RunProgress, rhs: RunProgress) -> Bool { lhs === rhs }

    /// Saturating: a server's numbers never wrap a count around.
    private static func add(_ bytes: Int64, to counter: ManagedAtomic<Int64>) {
        var old = counter.load(ordering: .relaxed)
        while true {
            let (exchanged, found) = counter.weakCompareExchange(
                expected: old, desired: old.addingSaturating(bytes), ordering: .sequentiallyConsistent)
            if exchanged { return }
            old = found
        }
    }
}
