import Dispatch

/// A queue of jobs of which at most `maxConcurrent` run at once — the download manager of a
/// typical app, as a reusable type.
///
/// **Threading.** Every method may be called from any thread, concurrently. `onStateChange` and
/// `onAllFinished` run on the main queue, typed `@MainActor`, unless the queue was made with a
/// `resultQueue` (then `@Sendable` handlers run there); one at a time and in order. A job's own handler
/// runs on the main queue (`add(_:id:then:)`, `@MainActor`) or on a queue named with it
/// (`add(_:id:resultQueue:then:)`, `@Sendable`). No handler is called while the queue's lock is held, so
/// a handler may call back into the queue.
///
/// Jobs of any value type can be added at any time, idle or running. Each job's states (`pending`,
/// `running(fraction:)`, then `finished`, `failed` or `cancelled`) reach `onStateChange` on the result
/// queue, in order, with progress coalesced as `JobHandle.onStateChange` does; each time the last queued
/// job ends, `onAllFinished` runs once on the result queue, after that job's final state.
/// No thread ever waits: a job that ends starts the next pending one. Adding, starting and finishing
/// cost the same at any queue length.
///
/// ```swift
/// let downloads = JobQueue<URL>(maxConcurrent: 3) { url, state in
///     rows[url]?.show(state)                        // on the main queue, on the main actor
/// } onAllFinished: {
///     banner.show("All download tasks have been completed")
/// }
/// for url in urls {
///     try downloads.add(.downloading(url), id: url) { result in   // this job's own result
///         if case .failure(let error) = result { rows[url]?.show(error) }
///     }
/// }
/// await downloads.waitUntilIdle()
/// ```
///
/// The queue retains its handlers for its lifetime, and each job until it ends. It remembers the
/// ids of the most recent `finishedHistoryLimit` jobs that ended (`finished`) and counts them all
/// (`finishedCount`): memory stays bounded however many jobs pass through.
public final class JobQueue<ID: Hashable & Sendable>: Sendable {
    /// Why `add(_:id:then:)` refused a job.
    public enum Error: Swift.Error, Equatable {
        /// A job with this id is already pending or running.
        case duplicateID(ID)
    }

    private let queue: DispatchQueue
    private let resultQueue: DispatchQueue
    private let onStateChange: @Sendable (ID, JobState) -> Void
    private let onAllFinished: @Sendable () -> Void
    private let state: LockedBox<JobQueueStateMachine<ID>>

    /// A queue whose handlers run on the main queue: `@MainActor` closures, so a main-actor screen
    /// updates itself in them as written.
    ///
    /// - Parameters:
    ///   - maxConcurrent: at most this many jobs run at once; a value below 1 counts as 1. Change it
    ///     with `setMaxConcurrent(_:)`.
    ///   - queue: where the jobs' bodies run.
    ///   - finishedHistoryLimit: how many ended ids `finished` remembers (1,000 unless told otherwise).
    ///   - onStateChange: every state of every job, in order per job, on the main queue.
    ///   - onAllFinished: once each time the queue drains, on the main queue.
    public convenience init(
        maxConcurrent: Int,
        queue: DispatchQueue = .global(),
        finishedHistoryLimit: Int = 1_000,
        onStateChange: @escaping @MainActor @Sendable (ID, JobState) -> Void = { _, _ in },
        onAllFinished: @escaping @MainActor @Sendable () -> Void = {}
    ) {
        self.init(
            maxConcurrent: maxConcurrent, queue: queue, resultQueue: mainQueue,
            finishedHistoryLimit: finishedHistoryLimit,
            onStateChange: MainQueueCall.nonisolated(onStateChange),
            onAllFinished: MainQueueCall.nonisolated(onAllFinished))
    }

    /// A queue whose handlers run on `resultQueue`, a queue the caller names: `@Sendable` closures.
    ///
    /// - Parameters:
    ///   - maxConcurrent: at most this many jobs run at once; a value below 1 counts as 1. Change it
    ///     with `setMaxConcurrent(_:)`.
    ///   - queue: where the jobs' bodies run.
    ///   - resultQueue: where the handlers run.
    ///   - finishedHistoryLimit: how many ended ids `finished` remembers (1,000 unless told otherwise).
    ///   - onStateChange: every state of every job, in order per job.
    ///   - onAllFinished: once each time the queue drains.
    public init(
        maxConcurrent: Int,
        queue: DispatchQueue = .global(),
        resultQueue: DispatchQueue,
        finishedHistoryLimit: Int = 1_000,
        onStateChange: @escaping @Sendable (ID, JobState) -> Void = { _, _ in },
        onAllFinished: @escaping @Sendable () -> Void = {}
    ) {
        self.queue = queue
        self.resultQueue = resultQueue
        self.onStateChange = onStateChange
        self.onAllFinished = onAllFinished
        self.state = LockedBox.make(JobQueueStateMachine(limit: maxConcurrent, historyLimit: finishedHistoryLimit))
    }

    /// Queues `job` under `id`; it starts at once if a slot is free and the queue is not paused, else
    /// when one frees up, in the order added. An id that ended before may be used again.
    ///
    /// - Parameters:
    ///   - job: the job to run; each add is a new run of it.
    ///   - id: names the job in `onStateChange`, `cancel(id:)`, `handle(for:)` and the lists.
    ///   - handler: this job's own result, once, on the main queue (`@MainActor`) — after its final
    ///     state reached `onStateChange` and before `onAllFinished` when the queue's handlers run on the
    ///     main queue too. `handle(for:)` gives the job's handle while it is pending or running.
    /// - Throws: `JobQueue.Error.duplicateID` when a job with `id` is still pending or running.
    public func add<Value>(
        _ job: Job<Value>, id: ID,
        then handler: (@MainActor @Sendable (Result<Value, any Swift.Error>) -> Void)? = nil
    ) throws {
        try add(
            job, id: id, resultQueue: mainQueue, handler: handler.map { MainQueueCall.nonisolated($0) })
    }

    /// Queues `job` under `id`, as `add(_:id:then:)` does, with its own result delivered on
    /// `resultQueue`, a queue the caller names: a `@Sendable` handler.
    ///
    /// - Parameters:
    ///   - job: the job to run; each add is a new run of it.
    ///   - id: names the job in `onStateChange`, `cancel(id:)`, `handle(for:)` and the lists.
    ///   - resultQueue: where `handler` runs.
    ///   - handler: this job's own result, once, on `resultQueue` — after its final state reached
    ///     `onStateChange` and before `onAllFinished` when that is the queue's serial result queue.
    /// - Throws: `JobQueue.Error.duplicateID` when a job with `id` is still pending or running.
    public func add<Value>(
        _ job: Job<Value>, id: ID, resultQueue: DispatchQueue,
        then handler: @escaping @Sendable (Result<Value, any Swift.Error>) -> Void
    ) throws {
        try add(job, id: id, resultQueue: resultQueue, handler: handler)
    }

    private func add<Value>(
        _ job: Job<Value>, id: ID, resultQueue handlerQueue: DispatchQueue,
        handler: (@Sendable (Result<Value, any Swift.Error>) -> Void)?
    ) throws {
        let sequence = state.withLock { $0.takeSequence() }
        let run = job.makeRun(on: queue, parent: nil) { [self] result in
            if let handler { handlerQueue.async { handler(result) } }
            completed(id, sequence: sequence)
        }
        let item = JobQueueStateMachine<ID>.Item(run: run) { run.start() }
        let onStateChange = self.onStateChange
        let observer = StateObserver(queue: resultQueue) { state in onStateChange(id, state) }
        let starts: [JobQueueStateMachine<ID>.Item]
        let drain: Bool
        do {
            // The observer is attached under the queue's lock (taking the run's inside it), so that it
            // hears `pending` first and a refused job is never observed.
            (starts, drain) = try state.withLock { machine in
                (try machine.add(item, id: id, sequence: sequence), run.attach(observer))
            }
        } catch {
            throw Error.duplicateID(id)
        }
        if drain { observer.scheduleDrain() }
        for item in starts { item.start() }
    }

    /// Cancels the job with `id`, pending or running; does nothing for an unknown or ended id.
    public func cancel(id: ID) {
        state.withLock { $0.run(for: id) }?.cancel()
    }

    /// Cancels every pending and running job.
    public func cancelAll() {
        for run in state.withLock({ $0.allRuns }) { run.cancel() }
    }

    /// The handle of the pending or running job with `id`, if any: cancel it, observe it (also its
    /// progress), or read its `error` once it ended.
    public func handle(for id: ID) -> JobHandle? {
        state.withLock { $0.run(for: id) }.map(JobHandle.init(run:))
    }

    /// Starts no more jobs until `resume()`; running jobs go on, and jobs can still be added.
    public func pause() {
        _ = state.withLock { $0.setPaused(true) }
    }

    /// Starts pending jobs again, up to the width.
    public func resume() {
        for item in state.withLock({ $0.setPaused(false) }) { item.start() }
    }

    /// Whether the queue is paused.
    public var isPaused: Bool { state.withLock { $0.isPaused } }

    /// Changes how many jobs may run at once, effective at once: raising it starts pending jobs now;
    /// lowering it lets running jobs finish and starts no more until fewer run than the new width.
    /// A value below 1 counts as 1.
    public func setMaxConcurrent(_ maxConcurrent: Int) {
        for item in state.withLock({ $0.setLimit(maxConcurrent) }) { item.start() }
    }

    /// The current width.
    public var maxConcurrent: Int { state.withLock { $0.limit } }

    /// Ids waiting for a slot, in the order they will start.
    public var pending: [ID] { state.withLock { $0.pending } }

    /// Ids running now, in the order they started.
    public var running: [ID] { state.withLock { $0.running } }

    /// The ids of the most recent jobs that ended (finished, failed or cancelled), most recent first:
    /// at most `finishedHistoryLimit` of them.
    public var finished: [ID] { state.withLock { $0.finished } }

    /// How many jobs have ended since the queue was made.
    public var finishedCount: Int { state.withLock { $0.finishedCount } }

    /// Suspends until no job is pending or running — at once if none is. Returns early, without
    /// error, when the awaiting task is cancelled. A paused queue with pending jobs is not idle.
    public func waitUntilIdle() async {
        let token = state.withLock { $0.makeWaiterToken() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if state.withLock({ $0.addWaiter(token, continuation) }) { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.cancelWaiter(token) }?.resume()
        }
    }

    private func completed(_ id: ID, sequence: UInt64) {
        let completion = state.withLock { $0.completed(id, sequence: sequence) }
        for item in completion.start { item.start() }
        if completion.drained { resultQueue.async(execute: onAllFinished) }
        for waiter in completion.waiters { waiter.resume() }
    }
}
