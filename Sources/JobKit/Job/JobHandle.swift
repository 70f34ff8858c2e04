import Dispatch
import Foundation

/// One run of a job: observe its state and progress, or cancel it.
///
/// **Threading.** Every member may be used from any thread. `cancel()` takes effect at once and is
/// idempotent; observers and delegates are called on the queue they were given, one call at a time, in the
/// run's order.
///
/// The run goes on whether or not the handle is kept; the handle keeps the run's state alive, not the
/// other way round.
public final class JobHandle: Sendable {
    let run: any AnyRun

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

    /// The error the run ended with, once it is final: the body's own error for `.failed`,
    /// `JobError.cancelled` for `.cancelled`; nil while it runs and after it finished.
    ///
    /// Final before the run's handler, observers and delegate hear of the final state, so they can
    /// read it.
    public var error: (any Error)? {
        run.error
    }

    /// The run's progress as a Foundation `Progress`, made on first use and kept up to date.
    ///
    /// A group's, collect's, settle's or sequence's progress has one child per member, each weighing
    /// one unit. It reads exactly 1.0 once the run has succeeded, before its handler runs. Cancelling
    /// it cancels the run. Key-value observers of it are called with no JobKit lock held: they may
    /// report progress for the same run, or cancel it.
    public var progress: Progress {
        run.progressReporter().progress
    }
}
