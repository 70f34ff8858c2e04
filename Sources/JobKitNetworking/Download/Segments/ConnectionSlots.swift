import Atomics

/// The connections one run may open: the slots its owner gave it when it started, lowered by what its
/// splits said they use. The run keeps the count itself, so a split that starts later (a retry after a
/// fallback to one connection) asks nobody; its owner is told each time the count goes down
/// (`DownloadHooks.connectionsUsed`), and never when it does not.
final class ConnectionSlots: Sendable {
    private let slots: ManagedAtomic<Int>

    init(_ count: Int) { slots = ManagedAtomic(max(count, 1)) }

    /// The connections the run may open now (at least one).
    var count: Int { slots.load(ordering: .acquiring) }

    /// The run opens at most `count` connections from now on (at least one counts): true when that
    /// is fewer than before (the slots are lowered; tell the owner), false when it changes nothing.
    func lower(to count: Int) -> Bool {
        let count = max(count, 1)
        var current = slots.load(ordering: .relaxed)
        while count < current {
            let (exchanged, found) = slots.weakCompareExchange(
                expected: current, desired: count, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = found
        }
        return false
    }
}
