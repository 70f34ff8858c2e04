import Foundation

/// One run of a job: observe its state and progress, or cancel it.
///
/// The run goes on whether or not the handle is kept; the handle keeps the run's state alive, not the
/// other way round.
public final class JobHandle: Sendable {
    private static let progressUnits: Int64 = 10_000

    let run: any AnyRun
    private let progressBox = LockedBox<Progress?>.make(nil)

    init(run: any AnyRun) {
        self.run = run
    }

    /// Identifies this run; equal to `JobDiagnostics.Event.runID` for events of this run.
    public var id: ObjectIdentifier { run.id }

    /// Cancels the run: it completes at once with `JobError.cancelled`, its `onCancel` handlers run
    /// exactly once, and a body that has not started never runs. Does nothing if it already completed.
    public func cancel() {
        run.cancel()
    }

    /// The run's current state.
    public var state: JobState {
        run.state
    }

    /// The run's progress as a Foundation `Progress` (created on first use, then kept up to date).
    ///
    /// It reads exactly 1.0 once the run has succeeded, before its handler runs. Cancelling it cancels
    /// the run. Key-value observers of it are called while JobKit applies an update: they must not
    /// report progress for the same run synchronously.
    public var progress: Progress {
        let (progress, isNew) = progressBox.withLock { stored -> (Progress, Bool) in
            if let stored { return (stored, false) }
            let progress = Progress(totalUnitCount: Self.progressUnits)
            stored = progress
            return (progress, true)
        }
        if isNew {
            progress.cancellationHandler = { [run] in run.cancel() }
            let box = progressBox
            let initial = run.attachProgress { fraction in Self.apply(fraction, to: progress, in: box) }
            Self.apply(initial, to: progress, in: box)
        }
        return progress
    }

    private static func apply(_ fraction: Double, to progress: Progress, in box: LockedBox<Progress?>) {
        let units = Int64((fraction * Double(progressUnits)).rounded(.down))
        box.withLock { _ in
            if units > progress.completedUnitCount { progress.completedUnitCount = units }
        }
    }
}
