import JobKit

/// Where one subscription to `JobHandle.statePublisher` is, as a value: the states waiting for demand,
/// the demand, and whether a drain is sending. Every transition returns what to do once the lock is
/// released; it never calls out, and it hands out what it stops holding, to be released with no lock
/// held.
///
/// At most one drain sends at a time, so calls to the subscriber never overlap. The waiting states
/// are bounded: `pending`, one running state (a newer replaces a waiting one), the final state.
struct StateSubscriptionStateMachine<Downstream, Observation> {
    private var downstream: Downstream?
    private var observation: Observation?
    /// Set once the subscription was cancelled: an observation that arrives later is ended at once.
    private var isCancelled = false
    private var waiting: [JobState] = []
    /// How many more states the subscriber asked for; `nil` is unlimited.
    private var demand: Int? = 0
    private var isDraining = false

    init(downstream: Downstream) {
        self.downstream = downstream
    }

    /// The states that wait for demand (for tests).
    var waitingStates: [JobState] { waiting }

    /// The observation started: returns it back when it must be ended at once (the subscription was
    /// cancelled while it started, or the final state was already sent).
    mutating func observing(_ new: Observation) -> Observation? {
        guard !isCancelled, downstream != nil else { return new }
        observation = new
        return nil
    }

    /// The run's observer delivered a state. Returns true when the caller must drain (on the
    /// observer's queue, where it already is).
    mutating func received(_ state: JobState) -> Bool {
        guard downstream != nil else { return false }
        if case .running = state, case .running = waiting.last {
            waiting[waiting.count - 1] = state
        } else {
            waiting.append(state)
        }
        return startDrain()
    }

    /// The subscriber asked for `more` (nil: unlimited). Returns true when the caller must schedule a
    /// drain on the observer's queue.
    mutating func requested(_ more: Int?) -> Bool {
        guard downstream != nil else { return false }
        add(more)
        return startDrain()
    }

    private mutating func add(_ more: Int?) {
        guard let current = demand, let more else {
            demand = nil
            return
        }
        demand = current.addingReportingOverflow(more).overflow ? nil : current + more
    }

    private mutating func startDrain() -> Bool {
        guard !isDraining, !waiting.isEmpty, demand != 0 else { return false }
        isDraining = true
        return true
    }

    /// What a drain does next.
    enum DrainAction {
        /// Send `state`, then call `sent(addingDemand:)`.
        case send(JobState, to: Downstream)
        /// Send the final state and `.finished`; end the observation (if any) and release both.
        case finish(JobState, to: Downstream, ending: Observation?)
        /// Nothing to send now: the drain stops.
        case stop
    }

    /// The draining caller asks what to send next.
    mutating func next() -> DrainAction {
        precondition(isDraining, "JobKitCombine: a state drain ran without starting")
        guard let downstream, !waiting.isEmpty, demand != 0 else {
            isDraining = false
            return .stop
        }
        let state = waiting.removeFirst()
        if let current = demand { demand = current - 1 }
        guard state.isFinal else { return .send(state, to: downstream) }
        self.downstream = nil
        waiting = []
        isDraining = false
        return .finish(state, to: downstream, ending: observation.take())
    }

    /// The subscriber took a state and asked for `more` (nil: unlimited).
    mutating func sent(addingDemand more: Int?) {
        add(more)
    }

    /// The subscription was cancelled: returns the subscriber and the observation to release (the
    /// observation ended first), nil when it had already ended.
    mutating func cancel() -> (Downstream, Observation?)? {
        isCancelled = true
        waiting = []
        guard let downstream = downstream.take() else { return nil }
        return (downstream, observation.take())
    }
}

extension Optional {
    /// Returns the value and leaves nil.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
