import JobKit

/// Where one subscription to `Job.publisher` is, as a value: every transition is a mutating method
/// that returns what to do once the lock is released. It never calls out, and it never releases the
/// subscriber or the job itself — it hands them out, so that their `deinit`s run with no lock held.
struct JobSubscriptionStateMachine<Downstream, Value: Sendable> {
    private enum State {
        /// Subscribed; the run starts at the first demand.
        case awaitingDemand(Downstream, Job<Value>)
        /// The run started; `handle` is nil until `perform` has returned it.
        case running(Downstream, handle: JobHandle?)
        /// The outcome was handed out, or the subscription was cancelled: nothing more is sent.
        case done
    }

    private var state: State

    init(downstream: Downstream, job: Job<Value>) {
        state = .awaitingDemand(downstream, job)
    }

    /// The subscriber asked for values: returns the job to perform when this is the first demand
    /// above zero (a demand of zero starts nothing).
    mutating func request(hasDemand: Bool) -> Job<Value>? {
        guard hasDemand, case .awaitingDemand(let downstream, let job) = state else { return nil }
        state = .running(downstream, handle: nil)
        return job
    }

    /// `perform` returned the run's handle. Returns it back when the run must be cancelled: the
    /// subscription was cancelled while `perform` was starting it (or the run has already delivered,
    /// when cancelling does nothing).
    mutating func started(_ handle: JobHandle) -> JobHandle? {
        switch state {
        case .running(let downstream, handle: nil):
            state = .running(downstream, handle: handle)
            return nil
        case .done:
            return handle
        case .awaitingDemand, .running(_, handle: .some):
            preconditionFailure("JobKitCombine: a subscription's run was started twice")
        }
    }

    /// The run completed: returns the subscriber to send its outcome to, or nil when the subscription
    /// was cancelled first.
    mutating func completed() -> Downstream? {
        guard case .running(let downstream, _) = state else { return nil }
        state = .done
        return downstream
    }

    /// What a cancellation must do after the lock is released.
    enum CancelAction {
        /// Nothing was running: release the subscriber and the job.
        case release(Downstream, Job<Value>)
        /// Cancel the run (when its handle is known yet) and release the subscriber.
        case cancel(JobHandle?, releasing: Downstream)
        /// Already done.
        case none
    }

    /// The subscription was cancelled.
    mutating func cancel() -> CancelAction {
        let previous = state
        state = .done
        switch previous {
        case .awaitingDemand(let downstream, let job): return .release(downstream, job)
        case .running(let downstream, let handle): return .cancel(handle, releasing: downstream)
        case .done: return .none
        }
    }
}
