import Dispatch

/// The state of one run, as a value: every transition is a mutating method that returns what to do
/// once the lock is released. It never calls out.
struct RunStateMachine<Value: Sendable> {
    typealias Completion = @Sendable (Result<Value, any Error>) -> Void

    enum Phase {
        case pending
        case running(fraction: Double)
        case finished
        case failed(any Error)
        /// `bodyCompleted` remembers a `finish`/`fail` that arrived after cancellation, so that a
        /// second one can still be reported as a misuse.
        case cancelled(bodyCompleted: Bool)
    }

    /// What the run's watchers must hear about a transition, after the lock is released.
    struct Notice {
        var state: JobState
        /// Observers that already hold the state and need a drain scheduled.
        var observersToDrain: [StateObserver]
        var reporter: ProgressReporter?
        var trace: TraceContext?
        var time: UInt64
        var forward: (@Sendable (Double) -> Void)?

        /// Delivers the notice: progress first, then observers, then tracers.
        func send() {
            if let reporter {
                reporter.bring(to: state)
                if state.isFinal { reporter.detach() }
            }
            if let forward, case .running(let fraction) = state { forward(fraction) }
            for observer in observersToDrain { observer.scheduleDrain() }
            trace?.record(state, at: time)
        }
    }

    private(set) var phase: Phase = .pending
    private var completion: Completion?
    private var cancelHandlers: [(token: Int, handler: @Sendable () -> Void)] = []
    private var nextCancelToken = 0
    private var misuseReported = false
    private var observers: [StateObserver] = []
    /// The observer of the delegate set with `JobHandle.setDelegate`, which a new delegate replaces.
    private var delegateObserver: StateObserver?
    private var reporter: ProgressReporter?
    private var composite: (any ProgressComposite)?
    /// Where a combinator wants this run's progress, to fold it into its own.
    private var forward: (@Sendable (Double) -> Void)?
    let trace: TraceContext?
    /// What the run performs, and where: set once, read without the lock (they never change).
    let body: @Sendable (Job<Value>.Controller) -> Void
    let queue: DispatchQueue

    init(
        body: @escaping @Sendable (Job<Value>.Controller) -> Void, queue: DispatchQueue,
        completion: @escaping Completion, trace: TraceContext?
    ) {
        self.body = body
        self.queue = queue
        self.completion = completion
        self.trace = trace
    }

    var state: JobState {
        switch phase {
        case .pending: .pending
        case .running(let fraction): .running(fraction: fraction)
        case .finished: .finished
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }

    /// The error the run ended with: its own for `.failed`, `JobError.cancelled` for `.cancelled`.
    var error: (any Error)? {
        switch phase {
        case .failed(let error): error
        case .cancelled: JobError.cancelled
        case .pending, .running, .finished: nil
        }
    }

    var isCancelled: Bool {
        if case .cancelled = phase { return true }
        return false
    }

    /// Moves to `newPhase` and returns who must hear of it (nil when nobody watches).
    private mutating func move(to newPhase: Phase) -> Notice? {
        phase = newPhase
        let state = self.state
        let observers = self.observers
        let forward = self.forward
        if state.isFinal {
            // Nothing a final run holds may reach another run: a chain of runs a million long would
            // otherwise be released recursively.
            self.observers = []
            delegateObserver = nil
            composite = nil
            self.forward = nil
        }
        guard !observers.isEmpty || reporter != nil || trace != nil || forward != nil else { return nil }
        return Notice(
            state: state, observersToDrain: observers.filter { $0.append(state) }, reporter: reporter,
            trace: trace, time: trace == nil ? 0 : TraceContext.now(), forward: forward)
    }

    // MARK: Transitions

    /// The body is about to run. Returns `nil` when the run was cancelled first: the body must not run.
    mutating func start() -> Notice?? {
        switch phase {
        case .pending:
            return .some(move(to: .running(fraction: 0)))
        case .cancelled:
            return nil
        case .running, .finished, .failed:
            preconditionFailure("JobKit: a run was started twice")
        }
    }

    enum CompleteAction {
        /// Deliver the result to the completion, after the notice; the new state is final.
        case deliver(Completion, Result<Value, any Error>, Notice?)
        /// The run had already completed; this is the body's second `finish`/`fail`.
        case reportMisuse
        case none
    }

    /// - Parameter fromBody: whether a job's body completes the run (a second completion is then a
    ///   misuse), or a combinator racing legitimately against cancellation or a timer.
    ///
    /// A failure with `JobError.cancelled` (a cancelled member or dependency, passed on) ends the run
    /// as `.cancelled`, never as `.failed`; its cancel handlers are dropped, not run.
    mutating func complete(with result: Result<Value, any Error>, fromBody: Bool) -> CompleteAction {
        switch phase {
        case .pending, .running:
            let newPhase: Phase
            switch result {
            case .success: newPhase = .finished
            case .failure(let error as JobError) where error == .cancelled: newPhase = .cancelled(bodyCompleted: true)
            case .failure(let error): newPhase = .failed(error)
            }
            cancelHandlers = []
            let notice = move(to: newPhase)
            return .deliver(takeCompletion(), result, notice)
        case .cancelled(bodyCompleted: false):
            phase = .cancelled(bodyCompleted: true)
            return .none
        case .finished, .failed, .cancelled(bodyCompleted: true):
            guard fromBody, !misuseReported else { return .none }
            misuseReported = true
            return .reportMisuse
        }
    }

    enum CancelAction {
        /// Run the handlers (in registration order), send the notice, then deliver `JobError.cancelled`.
        case cancel(handlers: [@Sendable () -> Void], completion: Completion, notice: Notice?)
        case none
    }

    mutating func cancel() -> CancelAction {
        switch phase {
        case .pending, .running:
            let handlers = cancelHandlers.map(\.handler)
            cancelHandlers = []
            let notice = move(to: .cancelled(bodyCompleted: false))
            return .cancel(handlers: handlers, completion: takeCompletion(), notice: notice)
        case .finished, .failed, .cancelled:
            return .none
        }
    }

    enum AddCancelHandlerAction {
        /// Kept; `token` removes it.
        case added(token: Int)
        /// The run is already cancelled: run the handler now.
        case runNow
        /// The run completed: the handler will never run.
        case dropped
    }

    mutating func addCancelHandler(_ handler: @escaping @Sendable () -> Void) -> AddCancelHandlerAction {
        switch phase {
        case .pending, .running:
            nextCancelToken += 1
            cancelHandlers.append((nextCancelToken, handler))
            return .added(token: nextCancelToken)
        case .cancelled:
            return .runNow
        case .finished, .failed:
            return .dropped
        }
    }

    /// Forgets a cancel handler, releasing what it holds.
    mutating func removeCancelHandler(token: Int) {
        if let index = cancelHandlers.firstIndex(where: { $0.token == token }) { cancelHandlers.remove(at: index) }
    }

    /// Records progress; returns the notice, or `nil` if nothing changed or nobody watches.
    mutating func report(progress fraction: Double) -> Notice? {
        guard case .running(let current) = phase else { return nil }
        let clamped = min(max(fraction, 0), 1)
        guard clamped > current else { return nil }
        return move(to: .running(fraction: clamped))
    }

    // MARK: Watchers

    /// Adds an observer, which hears the current state first and nothing after a final one.
    /// Returns `true` when the caller must schedule its drain.
    mutating func add(_ observer: StateObserver) -> Bool {
        if !state.isFinal { observers.append(observer) }
        return observer.append(state)
    }

    mutating func remove(_ observer: StateObserver) {
        observers.removeAll { $0 === observer }
        if delegateObserver === observer { delegateObserver = nil }
    }

    /// Makes `observer` the delegate's, replacing the previous one (returned, to be stopped).
    /// `drain` is `true` when the caller must schedule the new observer's drain.
    mutating func replaceDelegateObserver(with observer: StateObserver) -> (previous: StateObserver?, drain: Bool) {
        let previous = delegateObserver
        if let previous { observers.removeAll { $0 === previous } }
        if !state.isFinal { delegateObserver = observer }
        return (previous, add(observer))
    }

    enum ReporterAction {
        /// The reporter existed already.
        case existing(ProgressReporter)
        /// A new reporter: bring it to `state`, then attach the composite's children, if any.
        case created(ProgressReporter, state: JobState, composite: (any ProgressComposite)?)
    }

    /// Returns this run's progress reporter, making it with `make` on first use.
    mutating func reporter(orMake make: () -> ProgressReporter) -> ReporterAction {
        if let reporter { return .existing(reporter) }
        let reporter = make()
        self.reporter = reporter
        return .created(reporter, state: state, composite: composite)
    }

    /// Adopts `reporter` (a child of a group's progress): returns the state to bring it to.
    mutating func adopt(_ reporter: ProgressReporter) -> JobState {
        self.reporter = reporter
        return state
    }

    /// Sends this run's progress to `forward` from now on.
    mutating func forwardProgress(to forward: @escaping @Sendable (Double) -> Void) {
        self.forward = forward
    }

    /// Registers the run's members as the source of its progress; returns the progress whose
    /// children they must become, if somebody already asked for it.
    mutating func setComposite(_ composite: any ProgressComposite) -> ProgressReporter? {
        guard !state.isFinal else { return nil }
        self.composite = composite
        return reporter
    }

    private mutating func takeCompletion() -> Completion {
        guard let completion else { preconditionFailure("JobKit: a run completed twice") }
        self.completion = nil
        return completion
    }
}
