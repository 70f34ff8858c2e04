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
    /// Counted by runs and not yet taken by the state (`DownloadManagerStateMachine.fold`). Wrapping:
    /// each run's addition and its taking may land in either order, and cancel out exactly.
    fileprivate let unfolded = ManagedAtomic<Int64>(0)
    /// A delivery is waiting that will read the counts (the outbox's progress changed).
    fileprivate let deliveryWaits = ManagedAtomic<Bool>(false)

    /// Set when the outbox notes progress, cleared when a delivery begins (under the manager's lock).
    func setDeliveryWaiting(_ waits: Bool) {
        deliveryWaits.store(waits, ordering: .sequentiallyConsistent)
    }

    /// What the running runs counted and the state has not taken (never negative: between a run's
    /// two additions its taking may come first).
    var unfoldedBytes: Int64 { max(unfolded.load(ordering: .sequentiallyConsistent), 0) }
}

/// The bytes one run wrote since the manager's state last took them: counted on the transport's
/// thread, without the manager's lock (see `ProgressTally`). Once its run stops, the state takes the
/// count for the last time (`take(retiring: true)`): a late chunk of the stopped run counts nowhere.
final class RunProgress: Sendable, Equatable {
    private let tally: ProgressTally
    /// The bytes not taken yet; `retired` once the run stopped.
    private let count = ManagedAtomic<Int64>(0)
    private static let retired = Int64.min

    init(tally: ProgressTally) { self.tally = tally }

    /// Counts `bytes` more; true when the manager must be told (no delivery is waiting to show them).
    /// A stopped run's chunk counts nothing and tells nobody.
    func add(_ bytes: Int) -> Bool {
        let bytes = Int64(clamping: max(bytes, 0))
        var old = count.load(ordering: .relaxed)
        var new: Int64
        while true {
            guard old != Self.retired else { return false }
            // Saturating: a server's numbers never wrap a run's count around (nor onto `retired`).
            new = old.addingSaturating(bytes)
            let (exchanged, found) = count.weakCompareExchange(
                expected: old, desired: new, ordering: .sequentiallyConsistent)
            if exchanged { break }
            old = found
        }
        // What the count took, which its taking removes again.
        tally.unfolded.wrappingIncrement(by: new - old, ordering: .sequentiallyConsistent)
        return !tally.deliveryWaits.load(ordering: .sequentiallyConsistent)
    }

    /// What the run counted and the state has not taken.
    var bytes: Int64 { max(count.load(ordering: .sequentiallyConsistent), 0) }

    /// Takes what the run counted (the state adds it to its item): the count starts again at 0, or,
    /// `retiring`, stops for good (the run stopped).
    func take(retiring: Bool = false) -> Int64 {
        let taken = max(count.exchange(retiring ? Self.retired : 0, ordering: .sequentiallyConsistent), 0)
        tally.unfolded.wrappingDecrement(by: taken, ordering: .sequentiallyConsistent)
        return taken
    }

    static func == (lhs: RunProgress, rhs: RunProgress) -> Bool { lhs === rhs }
}
