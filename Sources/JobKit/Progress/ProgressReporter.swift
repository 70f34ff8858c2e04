import Foundation

/// Mirrors a run's progress into a Foundation `Progress`, in order and never backwards.
///
/// No lock is held while Foundation runs its key-value observers: one thread at a time applies the
/// newest requested value, and a report that arrives meanwhile (from another thread, or from a KVO
/// observer of this very progress) is picked up by that thread's loop instead of waiting for it.
final class ProgressReporter: Sendable {
    /// Units of a leaf run's progress: fine enough for any progress bar.
    static let leafUnits: Int64 = 10_000

    let progress: Progress
    /// The lock of the tree this reporter is in: a root's own, shared by every reporter attached
    /// under it (see `changing`).
    let tree: ProgressTreeLock
    private let requests = LockedBox.make(ProgressRequests())

    /// - Parameters:
    ///   - tree: the lock of the tree the reporter joins: its parent's; a new one for a root.
    ///   - onCancel: called when the `Progress` is cancelled (by its owner or its parent).
    init(units: Int64, tree: ProgressTreeLock = ProgressTreeLock(), onCancel: @escaping @Sendable () -> Void) {
        self.tree = tree
        progress = Progress(totalUnitCount: units)
        progress.cancellationHandler = onCancel
    }

    func apply(_ fraction: Double) {
        if requests.withLock({ $0.request(fraction: fraction) }) { applyRequests() }
    }

    /// Marks the work complete: `fractionCompleted` reads exactly 1.0 (also with no units at all).
    func complete() {
        let isApplier = requests.withLock { $0.requestCompletion() }
        // Completion is applied by the caller even while another thread applies, so that it holds
        // before the caller goes on (a run's handler reads 1.0); that thread re-applies it last.
        if isApplier { applyRequests() } else { setComplete() }
    }

    private func applyRequests() {
        while let request = requests.withLock({ $0.next() }) {
            if request.isComplete {
                setComplete()
            } else {
                changing {
                    let units = Int64((request.fraction * Double(progress.totalUnitCount)).rounded(.down))
                    if units > progress.completedUnitCount { progress.completedUnitCount = units }
                }
            }
        }
    }

    private func setComplete() {
        changing {
            if progress.totalUnitCount <= 0 { progress.totalUnitCount = 1 }
            progress.completedUnitCount = progress.totalUnitCount
        }
    }

    /// Runs `change`, a change JobKit makes to this reporter's progress tree.
    ///
    /// Foundation's `Progress` on Linux (swift-corelibs-foundation) updates a parent from its children
    /// with no lock of its own: two members of a group ending at once on two threads lose an update
    /// or count one twice (a group read 0.875 or 1.25 after every member had finished) and race on the
    /// parent's set of children. There every change to one tree goes through the tree's lock (changes
    /// to other trees do not wait for it); it calls no observer (no key-value observing there).
    /// Apple's `Progress` is thread-safe and calls key-value observers, which must not run under a
    /// lock: there the change runs as it is.
    func changing<Result>(_ change: () -> Result) -> Result {
        #if canImport(Darwin)
            change()
        #else
            tree.lock.withLock { _ in change() }
        #endif
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

/// What a `ProgressReporter` was asked to show, and whether a thread is applying it.
struct ProgressRequests {
    private(set) var fraction: Double = 0
    private(set) var isComplete = false
    private var isDirty = false
    private var isApplying = false

    /// Records a newer fraction; returns `true` when the caller must apply (nobody else is).
    mutating func request(fraction newFraction: Double) -> Bool {
        guard !isComplete, newFraction > fraction else { return false }
        fraction = newFraction
        return markDirty()
    }

    /// Records completion; returns `true` when the caller must apply (nobody else is).
    mutating func requestCompletion() -> Bool {
        isComplete = true
        return markDirty()
    }

    /// The request to apply next, or nil when the applier is done.
    mutating func next() -> (fraction: Double, isComplete: Bool)? {
        guard isDirty else {
            isApplying = false
            return nil
        }
        isDirty = false
        return (fraction, isComplete)
    }

    private mutating func markDirty() -> Bool {
        isDirty = true
        guard !isApplying else { return false }
        isApplying = true
        return true
    }
}

/// The lock of one progress tree (see `ProgressReporter.changing`).
final class ProgressTreeLock: Sendable {
    // Its state has a size: the thread sanitizer takes an empty one's access for one at the mutex's
    // own address, and reports a race between lock calls.
    let lock = LockedBox.make(false)
}
