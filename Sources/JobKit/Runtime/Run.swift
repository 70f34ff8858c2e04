import Dispatch
import Foundation

/// What a `JobHandle` or a group needs of a run, whatever its value type.
protocol AnyRun: Sendable {
    var id: ObjectIdentifier { get }
    var state: JobState { get }
    /// The error the run ended with, once final (`JobError.cancelled` when cancelled).
    var error: (any Error)? { get }
    var trace: TraceContext? { get }
    func cancel()
    func report(progress fraction: Double)
    func observe(_ observer: StateObserver)
    func stopObserving(_ observer: StateObserver)
    /// Forgets a cancel handler registered with `onCancel`.
    func removeCancelHandler(token: Int)
    /// Makes `observer` the run's delegate observer, ending the previous one.
    func replaceDelegateObserver(with observer: StateObserver)
    /// This run's progress reporter, made on first use.
    func progressReporter() -> ProgressReporter
    /// Mirrors this run's progress into `reporter` (a child of its group's progress).
    func adopt(_ reporter: ProgressReporter)
}

/// What a `Job<Value>.Controller` holds — a run's storage, a progress share and a queue — with no
/// field typed by `Value`: the controller's one stored property.
// Safety: as for `Run`: the storage's state is only touched under its lock.
struct RunController: @unchecked Sendable {
    let storage: RunStorage
    let share: ProgressShare
    let queue: DispatchQueue
}

/// A job's body without its value type, so that a run's storage (not generic) can start it.
///
/// A body takes a `Job<Value>.Controller`, a struct whose one stored property is a `RunController`,
/// so it is passed exactly as a `RunController` is, whatever `Value` is: its storage, share and queue
/// by value, field by field (a closure stored in a generic type is kept at its most general
/// abstraction, and a `Controller` there is still a plain struct of known layout — checked: the body
/// is called with `(storage, offset, scale, queue, context)` and no generic metadata). The body is cast
/// bit for bit (`ErasedCasts.body`): a job's body is the run's entry, with no closure made around it.
// Safety: immutable once made; called only as `call`, with a `RunController` for a run of the job's
// own `Value` (a run is made from its job, and its storage keeps the body beside its state).
struct RunBody: @unchecked Sendable {
    let call: @Sendable (RunController) -> Void

    /// The body of a `Job<Value>`, erased.
    @inline(__always)
    init<Value>(_ body: @escaping @Sendable (Job<Value>.Controller) -> Void) {
        self = ErasedCasts.body(body)
    }

    /// A body that takes the untyped controller as it is.
    init(call: @escaping @Sendable (RunController) -> Void) {
        self.call = call
    }
}

/// The storage of one run: its state machine and its mutex, in a single allocation. Not generic, so
/// that making, starting and freeing a run looks up no generic metadata, and GCD can start it
/// through a plain C function (`RunDispatch`).
///
/// The mutex is the buffer's header and the state machine its one element: the standard library's
/// `ManagedBuffer` makes and destroys a header through unspecialized code (a value-witness call to
/// copy it in, another to destroy it), which costs nothing for a plain mutex word; the state machine
/// is initialized and destroyed here, in code the compiler sees whole.
final class RunStorage: ManagedBuffer<PlatformMutex, RunStateMachine> {
    /// A storage for a new run, with its mutex free.
    @inline(__always)
    static func make(
        body: RunBody, queue: DispatchQueue, completion: ErasedRunCompletion, trace: TraceContext?
    ) -> RunStorage {
        let storage = create(minimumCapacity: 1) { _ in PlatformMutex() } as! RunStorage
        storage.withUnsafeMutablePointers { mutex, state in
            MutexOps.initialize(mutex)
            state.initialize(to: RunStateMachine(body: body, queue: queue, completion: completion, trace: trace))
        }
        return storage
    }

    deinit {
        withUnsafeMutablePointers { mutex, state in
            _ = state.deinitialize(count: 1)
            MutexOps.destroy(mutex)
        }
    }

    /// Runs `body` with exclusive access to the state machine. Never call user code, a queue or a
    /// continuation from `body`: compute an action, return it, and act after the lock is released.
    @inline(__always)
    func withLock<Result>(_ body: (inout RunStateMachine) -> Result) -> Result {
        withUnsafeMutablePointers { mutex, state in
            MutexOps.lock(mutex)
            defer { MutexOps.unlock(mutex) }
            return body(&state.pointee)
        }
    }

    /// The queue the run was made for; it never changes.
    @inline(__always)
    var queue: DispatchQueue { withUnsafeMutablePointerToElements { $0.pointee.queue } }

    /// Completes the run of a `Job<Value>` (see `Run.complete(with:fromBody:)`). The notice and the
    /// completion go through the `CompletionTrampoline`: a completion that completes another run
    /// never deepens the stack. A method of the storage, which its caller holds: no retain of it.
    func complete<Value: Sendable>(with result: Result<Value, any Error>, fromBody: Bool) {
        let failure: (any Error)?
        switch result {
        case .success: failure = nil
        case .failure(let error): failure = error
        }
        switch withLock({ $0.complete(failure: failure, fromBody: fromBody) }) {
        case .deliver(let completion, let notice):
            if let notice {
                CompletionTrampoline.deliver(result) { result in
                    notice.send()
                    completion(result)
                }
            } else {
                CompletionTrampoline.deliver(result, to: completion)
            }
        case .reportMisuse:
            JobDiagnostics.report(.completedTwice, runID: ObjectIdentifier(self))
        case .none:
            break
        }
    }

    /// Runs the body, unless the run was cancelled first. Called once, on the run's queue. Either
    /// way the run lets go of its job's body here: a run that has ended keeps nothing its job
    /// captured.
    func runBody() {
        let action = withLock { $0.start() }
        guard case .run(let body, let notice) = consume action else { return }
        if let notice {
            notice.send()
            // A traced run's body runs inside its tracers' scope (a span as the current context); an
            // untraced one (no notice) takes none of this path.
            if let trace = notice.trace { return trace.scoped { call(body) } }
        }
        call(body)
    }
}

/// One run of a job: its storage, seen with its value type.
///
/// Every transition is decided under the lock and acted on after it: cancel handlers, observers,
/// tracers, progress and the completion are called with no lock held.
// Safety: the state machine in `storage` is only touched inside `withLock`, which holds its mutex —
// except its `queue`, which is set when the storage is made and never changes.
struct Run<Value: Sendable>: AnyRun, @unchecked Sendable {
    typealias Completion = RunCompletion<Value>

    let storage: RunStorage

    /// A run of a job's `body` on `queue` (not started yet) whose completion is called exactly once,
    /// on whatever thread completes it.
    @inline(__always)
    static func make(
        body: RunBody, queue: DispatchQueue, trace: TraceContext? = nil, completion: Completion
    ) -> Run<Value> {
        let storage = RunStorage.make(body: body, queue: queue, completion: completion.erased, trace: trace)
        trace?.record(.pending)
        return Run(storage: storage)
    }

    var id: ObjectIdentifier { ObjectIdentifier(storage) }

    /// Runs `body` under the storage's lock. The storage is borrowed as it is: this run holds it.
    @inline(__always)
    private func withLock<Result>(_ body: (inout RunStateMachine) -> Result) -> Result {
        withBorrowed(storage) { $0.withLock(body) }
    }

    /// Schedules the body on the run's queue. A run cancelled before it runs never calls it.
    @inline(__always)
    consuming func start() {
        RunDispatch.start(storage)
    }

    var state: JobState { withLock { $0.state } }

    var error: (any Error)? { withLock { $0.error } }

    var isCancelled: Bool { withLock { $0.isCancelled } }

    var trace: TraceContext? { withLock { $0.trace } }

    /// Completes the run. The notice and the completion go through the `CompletionTrampoline`: a
    /// completion that completes another run never deepens the stack.
    @inline(__always)
    func complete(with result: Result<Value, any Error>, fromBody: Bool = true) {
        storage.complete(with: result, fromBody: fromBody)
    }

    /// Cancels the run: its handlers, notice and completion run before this returns, and so do
    /// those of every run the cancellation cascades to — iteratively, through the
    /// `CompletionTrampoline`, so that cancelling a deep composition never deepens the stack.
    func cancel() {
        guard case .cancel(let handlers, let erased, let notice) = withLock({ $0.cancel() }) else { return }
        let completion = Completion(erased)
        CompletionTrampoline.cancel {
            for handler in handlers { handler() }
            // Queued behind every cancellation the handlers cascaded to (a group's members, theirs):
            // their handlers have run when this run's completion is delivered.
            CompletionTrampoline.afterCancellations {
                notice?.send()
                completion(.failure(JobError.cancelled))
            }
        }
    }

    /// Registers a cancel handler; returns its token (for `removeCancelHandler`), or nil when it ran
    /// at once (already cancelled) or never will (already completed).
    @discardableResult
    func onCancel(_ handler: @escaping @Sendable () -> Void) -> Int? {
        switch withLock({ $0.addCancelHandler(handler) }) {
        case .added(let token):
            return token
        case .runNow:
            handler()
            return nil
        case .dropped:
            return nil
        }
    }

    func removeCancelHandler(token: Int) {
        withLock { $0.removeCancelHandler(token: token) }
    }

    /// Records progress. The notice goes through the `CompletionTrampoline`: a report forwarded up
    /// a composition a million levels deep is a loop, not a million frames.
    func report(progress fraction: Double) {
        guard !fraction.isNaN, let notice = withLock({ $0.report(progress: fraction) }) else { return }
        CompletionTrampoline.deliver(notice) { $0.send() }
    }

    // MARK: Watchers

    func observe(_ observer: StateObserver) {
        if attach(observer) { observer.scheduleDrain() }
    }

    /// Attaches `observer` without scheduling its drain: returns `true` when the caller must call
    /// `observer.scheduleDrain()` once it holds no lock.
    func attach(_ observer: StateObserver) -> Bool {
        withLock { $0.add(observer) }
    }

    func stopObserving(_ observer: StateObserver) {
        withLock { $0.remove(observer) }
        observer.stop()
    }

    func replaceDelegateObserver(with observer: StateObserver) {
        let (previous, drain) = withLock { $0.replaceDelegateObserver(with: observer) }
        previous?.stop()
        if drain { observer.scheduleDrain() }
    }

    func progressReporter() -> ProgressReporter {
        let action = withLock { machine in
            machine.reporter {
                // Strong, so that a progress alone can still cancel the run: the cycle
                // run → reporter → handler → run is broken when the run ends (`detach()`).
                ProgressReporter(units: ProgressReporter.leafUnits) { [self] in cancel() }
            }
        }
        switch action {
        case .existing(let reporter):
            return reporter
        case .created(let reporter, let state, let composite):
            if state.isFinal { reporter.detach() }
            reporter.bring(to: state)
            composite?.attachChildren(to: reporter)
            return reporter
        }
    }

    func adopt(_ reporter: ProgressReporter) {
        reporter.bring(to: withLock { $0.adopt(reporter) })
    }

    /// Sends this run's progress reports to `forward` (called with no lock held).
    func forwardProgress(to forward: @escaping @Sendable (Double) -> Void) {
        withLock { $0.forwardProgress(to: forward) }
    }

    /// Makes `composite` (a group's members) the source of this run's progress.
    func setComposite(_ composite: any ProgressComposite) {
        if let reporter = withLock({ $0.setComposite(composite) }) {
            composite.attachChildren(to: reporter)
        }
    }
}
