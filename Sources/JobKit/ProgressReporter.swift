import Foundation

/// Mirrors a run's progress into a Foundation `Progress`, in order and never backwards.
///
/// Updates are applied under the reporter's own lock (never the run's), so that two threads
/// reporting at once cannot leave an older value last. Key-value observers of the progress run
/// while that lock is held: they must not report progress for the same run synchronously.
final class ProgressReporter: Sendable {
    /// Units of a leaf run's progress: fine enough for any progress bar.
    static let leafUnits: Int64 = 10_000

    let progress: Progress
    private let lock = LockedBox<Void>.make(())

    /// - Parameter onCancel: called when the `Progress` is cancelled (by its owner or its parent).
    init(units: Int64, onCancel: @escaping @Sendable () -> Void) {
        progress = Progress(totalUnitCount: units)
        progress.cancellationHandler = onCancel
    }

    func apply(_ fraction: Double) {
        lock.withLock { _ in
            let units = Int64((fraction * Double(progress.totalUnitCount)).rounded(.down))
            if units > progress.completedUnitCount { progress.completedUnitCount = units }
        }
    }

    /// Marks the work complete: `fractionCompleted` reads exactly 1.0 (also with no units at all).
    func complete() {
        lock.withLock { _ in
            if progress.totalUnitCount <= 0 { progress.totalUnitCount = 1 }
            progress.completedUnitCount = progress.totalUnitCount
        }
    }

    /// Forgets the cancellation handler once the run has ended, releasing what it retained.
    func detach() {
        progress.cancellationHandler = nil
    }

    /// Brings a reporter made mid-run up to `state`.
    func bring(to state: JobState) {
        switch state {
        case .running(let fraction): apply(fraction)
        case .finished: complete()
        case .pending, .failed, .cancelled: break
        }
    }
}

/// A run whose progress is made of its members' (a group, collect, settle or sequence).
protocol ProgressComposite: AnyObject, Sendable {
    /// Gives `parent` one child per member, weighted equally, each mirroring its member's progress.
    func attachChildren(to parent: ProgressReporter)
}
