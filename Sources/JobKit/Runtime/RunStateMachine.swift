import Dispatch

/// Where a run's result goes, exactly once: a closure, a slot of a group's shared storage, or a
/// `perform` handler on its result queue. Members and performs carry no closure of their own, so a
/// pending one costs no allocation beyond its run, and a member reports by a direct call to its
/// group (a concrete type: no existential or virtual call, which would run unspecialized code).
enum RunCompletion<Value: Sendable>: Sendable {
    case call(@Sendable (Result<Value, any Error>) -> Void)
    case member(JobGroup<Value>, index: Int)
    case handler(@Sendable (Result<Value, any Error>) -> Void, resultQueue: DispatchQueue)

    @inline(__always)
    func callAsFunction(_ result: Result<Value, any Error>) {
        switch self {
        case .call(let completion): completion(result)
        case .member(let parent, let index): parent.memberCompleted(at: index, with: result)
        case .handler(let handler, let resultQueue):
            MainQueueWatchdog.deliver(on: resultQueue) { handler(result) }
        }
    }

    /// The same completion without its value type, for a run's storage (which is not generic).
    @inline(__always)
    var erased: ErasedRunCompletion {
        switch self {
        case .call(let completion): .call(Self.erase(completion))
        case .member(let parent, let index): .member(parent, index: index)
        case .handler(let handler, let resultQueue): .handler(Self.erase(handler), resultQueue: resultQueue)
        }
    }

    /// The completion `erased` made, typed again.
    @inline(__always)
    init(_ erased: ErasedRunCompletion) {
        switch erased {
        case .call(let completion): self = .call(Self.type(completion))
        case .member(let parent, let index):
            // Checked: an unchecked cast saved less than 3% (BENCHMARKS.md, "Unsafe code and what it saves").
            self = .member(parent as! JobGroup<Value>, index: index)
        case .handler(let handler, let resultQueue): self = .handler(Self.type(handler), resultQueue: resultQueue)
        }
    }

    @inline(__always)
    private static func erase(_ handler: @escaping @Sendable (Result<Value, any Error>) -> Void)
        -> ErasedRunCompletion.Handler
    {
        ErasedCasts.handler(handler)
    }

    @inline(__always)
    static func type(_ handler: ErasedRunCompletion.Handler) -> @Sendable (Result<Value, any Error>) -> Void {
        ErasedCasts.handler(handler, of: Value.self)
    }
}

/// A `RunCompletion` stored without its value type, so that a run's storage is one non-generic class:
/// no generic metadata to look up when it is made, started or freed, and a start that GCD can call
/// through a plain C function.
// A handler is a `(Result<Value, any Error>) -> Void` kept without its type (`ErasedCasts`); a
// member's parent is the `JobGroup<Value>` of the same `Value`. Both are immutable once made.
// `callAsFunction` is called only by the run's own `Run<Value>.complete`, with the `Value` the
// completion was made for.
// Safety: kept and released as this type, and called only once cast back to the very type it was.
enum ErasedRunCompletion: @unchecked Sendable {
    case call(Handler)
    case member(AnyObject, index: Int)
    case handler(Handler, resultQueue: DispatchQueue)

    /// Calls the completion of a run of a `Job<Value>` with its result, read in place: no typed copy
    /// of the completion is made (and retained) on the way.
    @inline(__always)
    func callAsFunction<Value: Sendable>(_ result: Result<Value, any Error>) {
        switch self {
        case .call(let completion): RunCompletion<Value>.type(completion)(result)
        case .member(let parent, let index):
            (parent as! JobGroup<Value>).memberCompleted(at: index, with: result)
        case .handler(let handler, let resultQueue):
            let handler = RunCompletion<Value>.type(handler)
            MainQueueWatchdog.deliver(on: resultQueue) { handler(result) }
        }
    }
}

/// What only some runs need — cancel handlers, observers, progress, a forwarder, a trace — made on
/// first use (a traced run's when it is made), in one allocation, so that a run nobody watches stays
/// small and cheap to make and to free.
final class RunWatchers {
    /// The run's trace context, if it is traced.
    let trace: TraceContext?
    var cancelHandlers: [(token: Int, handler: @Sendable () -> Void)] = []
    var nextCancelToken = 0
    var observers: [StateObserver] = []
    /// The observer of the delegate set with `JobHandle.setDelegate`, which a new delegate replaces.
    var delegateObserver: StateObserver?
    var reporter: ProgressReporter?
    var composite: (any ProgressComposite)?
    /// Where a combinator wants this run's progress, to fold it into its own.
    var forward: (@Sendable (Double) -> Void)?

    init(trace: TraceContext? = nil) {
        self.trace = trace
    }
}

/// The state of one run, as a value: every transition is a mutating method that returns what to do
/// once the lock is released. It never calls out.
///
/// Not generic: a run's value never passes through it (the result goes straight from `Run.complete` to
/// the completion), and its completion is kept erased.
struct RunStateMachine {
    typealias Completion = ErasedRunCompletion

    enum Phase {
        case pending
        case running(fraction: Double)
        case finished
        /// The error is kept beside the phase (`failure`), so that a phase holds no reference: it is
        /// copied and dropped with no release.
        case failed
        /// `bodyCompleted` remembers a `finish`/`fail` that arrived after cancellation, so that a
        /// second one can still be reported as a misuse.
        case cancelled(bodyCompleted: Bool)
    }

    /// What the run's watchers must hear about a transition, after the lock is released.
    ///
    /// A class: it exists only for a watched run, and an unwatched run's transitions then carry a
    /// single nil pointer instead of a large optional value to copy and destroy.
    final class Notice: Sendable {
        let state: JobState
        /// Observers that already hold the state and need a drain scheduled.
        let observersToDrain: [StateObserver]
        let reporter: ProgressReporter?
        let trace: TraceContext?
        let time: UInt64
        /// The error of a failed traced run, for its tracers.
        let error: (any Error)?
        let forward: (@Sendable (Double) -> Void)?

        init(
            state: JobState, observersToDrain: [StateObserver], reporter: ProgressReporter?, trace: TraceContext?,
            time: UInt64, error: (any Error)?, forward: (@Sendable (Double) -> Void)?
        ) {
            self.state = state
            self.observersToDrain = observersToDrain
            self.reporter = reporter
            self.trace = trace
            self.time = time
            self.error = error
            self.forward = forward
        }

        /// Delivers the notice: progress first, then observers, then tracers.
        func send() {
            if let reporter {
                reporter.bring(to: state)
                if state.isFinal { reporter.detach() }
            }
            if let forward, case .running(let fraction) = state { forward(fraction) }
            for observer in observersToDrain { observer.scheduleDrain() }
            trace?.record(state, at: time, error: error)
        }
    }

    /// What changes over a run. A struct of its own, so that the run's state is built in place in its
    /// storage: one large struct whose mutable fields sat beside its constants was built on the stack,
    /// copied in, and the copy destroyed.
    private struct Mutable {
        // Declared in this order so that the flag fits beside the phase's tag: a smaller run.
        var phase: Phase = .pending
        var misuseReported = false
        var completion: Completion?
        /// Made on first use (see `RunWatchers`).
        var watchers: RunWatchers?
        /// What the run performs (its job's body): taken when the body starts, or when a run
        /// cancelled first reaches its start, so that a run that has ended never keeps its job's body
        /// — and what the body captured — alive.
        var body: RunBody?
        /// The error of a `.failed` run.
        var failure: (any Error)?
    }

    private var mutable: Mutable
    /// Where the run performs: set once, read without the lock (it never changes).
    let queue: DispatchQueue

    init(body: RunBody, queue: DispatchQueue, completion: Completion, trace: TraceContext?) {
        self.queue = queue
        self.mutable = Mutable(completion: completion, watchers: trace.map(RunWatchers.init(trace:)), body: body)
    }

    /// The run's trace context, if it is traced (kept with its watchers: a run is rarely traced).
    var trace: TraceContext? { mutable.watchers?.trace }

    private(set) var phase: Phase {
        @inline(__always) get { mutable.phase }
        @inline(__always) set { mutable.phase = newValue }
    }

    private var misuseReported: Bool {
        @inline(__always) get { mutable.misuseReported }
        @inline(__always) set { mutable.misuseReported = newValue }
    }

    private var completion: Completion? {
        @inline(__always) get { mutable.completion }
        @inline(__always) set { mutable.completion = newValue }
    }

    private var watchers: RunWatchers? {
        @inline(__always) get { mutable.watchers }
        @inline(__always) set { mutable.watchers = newValue }
    }

    private mutating func makeWatchers() -> RunWatchers {
        if let watchers { return watchers }
        let made = RunWatchers()
        watchers = made
        return made
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
        case .failed: mutable.failure
        case .cancelled: JobError.cancelled
        case .pending, .running, .finished: nil
        }
    }

    var isCancelled: Bool {
        if case .cancelled = phase { return true }
        return false
    }

    /// Moves to `newPhase` and returns who must hear of it (nil when nobody watches).
    @inline(__always)
    private mutating func move(to newPhase: Phase) -> Notice? {
        phase = newPhase
        guard watchers != nil else { return nil }
        return notice()
    }

    private mutating func notice() -> Notice? {
        let state = self.state
        let observers = watchers?.observers ?? []
        let forward = watchers?.forward
        let reporter = watchers?.reporter
        if state.isFinal, let watchers {
            // Nothing a final run holds may reach another run: a chain of runs a million long would
            // otherwise be released recursively.
            watchers.observers = []
            watchers.delegateObserver = nil
            watchers.composite = nil
            watchers.forward = nil
        }
        guard !observers.isEmpty || reporter != nil || trace != nil || forward != nil else { return nil }
        return Notice(
            state: state, observersToDrain: observers.filter { $0.append(state) }, reporter: reporter,
            trace: trace, time: trace == nil ? 0 : TraceContext.now(), error: trace == nil ? nil : error,
            forward: forward)
    }

    // MARK: Transitions

    enum StartAction {
        /// Send the notice, then call the body.
        case run(RunBody, Notice?)
        /// The run was cancelled first: the body must not run. It is handed out only to be released
        /// with no lock held (releasing it may run a captured object's `deinit`).
        case skip(RunBody?)
    }

    /// The body is about to run; hands it over, so that the run keeps it no longer.
    mutating func start() -> StartAction {
        switch phase {
        case .pending:
            let notice = move(to: .running(fraction: 0))
            return .run(takeBody(), notice)
        case .cancelled:
            defer { mutable.body = nil }
            return .skip(mutable.body)
        case .running, .finished, .failed:
            preconditionFailure("JobKit: a run was started twice")
        }
    }

    enum CompleteAction {
        /// Deliver the result to the completion, after the notice; the new state is final.
        case deliver(Completion, Notice?)
        /// The run had already completed; this is the body's second `finish`/`fail`.
        case reportMisuse
        case none
    }

    /// - Parameters:
    ///   - failure: the error the run ends with; nil when it succeeded.
    ///   - fromBody: whether a job's body completes the run (a second completion is then a misuse), or
    ///     a combinator racing legitimately against cancellation or a timer.
    ///
    /// A failure with `JobError.cancelled` (a cancelled member or dependency, passed on) ends the run
    /// as `.cancelled`, never as `.failed`; its cancel handlers are dropped, not run.
    mutating func complete(failure: (any Error)?, fromBody: Bool) -> CompleteAction {
        switch phase {
        case .pending, .running:
            let newPhase: Phase
            switch failure {
            case .none: newPhase = .finished
            case .some(let error as JobError) where error == .cancelled: newPhase = .cancelled(bodyCompleted: true)
            case .some(let error):
                newPhase = .failed
                mutable.failure = error
            }
            watchers?.cancelHandlers = []
            let notice = move(to: newPhase)
            return .deliver(takeCompletion(), notice)
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
            let handlers = watchers?.cancelHandlers.map(\.handler) ?? []
            watchers?.cancelHandlers = []
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
            let watchers = makeWatchers()
            watchers.nextCancelToken += 1
            watchers.cancelHandlers.append((watchers.nextCancelToken, handler))
            return .added(token: watchers.nextCancelToken)
        case .cancelled:
            return .runNow
        case .finished, .failed:
            return .dropped
        }
    }

    /// Forgets a cancel handler, releasing what it holds.
    mutating func removeCancelHandler(token: Int) {
        guard let watchers, let index = watchers.cancelHandlers.firstIndex(where: { $0.token == token }) else { return }
        watchers.cancelHandlers.remove(at: index)
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
        if !state.isFinal { makeWatchers().observers.append(observer) }
        return observer.append(state)
    }

    mutating func remove(_ observer: StateObserver) {
        guard let watchers else { return }
        watchers.observers.removeAll { $0 === observer }
        if watchers.delegateObserver === observer { watchers.delegateObserver = nil }
    }

    /// Makes `observer` the delegate's, replacing the previous one (returned, to be stopped).
    /// `drain` is `true` when the caller must schedule the new observer's drain.
    mutating func replaceDelegateObserver(with observer: StateObserver) -> (previous: StateObserver?, drain: Bool) {
        let previous = watchers?.delegateObserver
        if let previous { watchers?.observers.removeAll { $0 === previous } }
        if !state.isFinal { makeWatchers().delegateObserver = observer }
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
        let watchers = makeWatchers()
        if let reporter = watchers.reporter { return .existing(reporter) }
        let reporter = make()
        watchers.reporter = reporter
        return .created(reporter, state: state, composite: watchers.composite)
    }

    /// Adopts `reporter` (a child of a group's progress): returns the state to bring it to.
    mutating func adopt(_ reporter: ProgressReporter) -> JobState {
        makeWatchers().reporter = reporter
        return state
    }

    /// Sends this run's progress to `forward` from now on.
    mutating func forwardProgress(to forward: @escaping @Sendable (Double) -> Void) {
        makeWatchers().forward = forward
    }

    /// Registers the run's members as the source of its progress; returns the progress whose
    /// children they must become, if somebody already asked for it.
    mutating func setComposite(_ composite: any ProgressComposite) -> ProgressReporter? {
        guard !state.isFinal else { return nil }
        let watchers = makeWatchers()
        watchers.composite = composite
        return watchers.reporter
    }

    private mutating func takeBody() -> RunBody {
        guard let body = mutable.body else { preconditionFailure("JobKit: a run was started twice") }
        mutable.body = nil
        return body
    }

    private mutating func takeCompletion() -> Completion {
        guard let completion else { preconditionFailure("JobKit: a run completed twice") }
        self.completion = nil
        return completion
    }
}
