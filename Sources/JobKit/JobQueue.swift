import Dispatch

/// A queue of jobs of which at most `maxConcurrent` run at once — the download manager of a
/// typical app, as a reusable type.
///
/// Jobs can be added at any time, idle or running. Each job's states (`pending`, `running(fraction:)`,
/// then `finished`, `failed` or `cancelled`) reach `onStateChange` on `resultQueue`, in order; each
/// time the last queued job ends, `onAllFinished` runs once on `resultQueue`, after that job's final
/// state. No thread ever waits: a job that ends starts the next pending one.
///
/// ```swift
/// let downloads = JobQueue<URL>(maxConcurrent: 3) { url, state in
///     rows[url]?.show(state)                        // on the main queue
/// } onAllFinished: {
///     banner.show("All download tasks have been completed")
/// }
/// for url in urls { try downloads.add(.downloading(url), id: url) }
/// ```
///
/// The queue retains its handlers for its lifetime, and each job until it ends.
public final class JobQueue<ID: Hashable & Sendable>: Sendable {
    /// Why `add(_:id:)` refused a job.
    public enum Error: Swift.Error, Equatable {
        /// A job with this id is already pending or running.
        case duplicateID(ID)
    }

    private let queue: DispatchQueue
    private let resultQueue: DispatchQueue
    private let onStateChange: @Sendable (ID, JobState) -> Void
    private let onAllFinished: @Sendable () -> Void
    private let state: LockedBox<JobQueueStateMachine<ID>>

    /// - Parameters:
    ///   - maxConcurrent: at most this many jobs run at once; at least 1. Change it with `setMaxConcurrent(_:)`.
    ///   - queue: where the jobs' bodies run.
    ///   - resultQueue: where the handlers run. Defaults to the main queue.
    ///   - onStateChange: every state of every job, in order per job.
    ///   - onAllFinished: once each time the queue drains.
    public init(
        maxConcurrent: Int,
        queue: DispatchQueue = .global(),
        resultQueue: DispatchQueue = .main,
        onStateChange: @escaping @Sendable (ID, JobState) -> Void = { _, _ in },
        onAllFinished: @escaping @Sendable () -> Void = {}
    ) {
        precondition(maxConcurrent >= 1, "JobKit: maxConcurrent must be at least 1, got \(maxConcurrent)")
        self.queue = queue
        self.resultQueue = resultQueue
        self.onStateChange = onStateChange
        self.onAllFinished = onAllFinished
        self.state = LockedBox.make(JobQueueStateMachine(limit: maxConcurrent))
    }

    /// Queues `job` under `id`; it starts at once if a slot is free, else when one frees up, in the
    /// order added. An id that finished before may be used again.
    ///
    /// - Throws: `JobQueue.Error.duplicateID` when a job with `id` is still pending or running.
    public func add(_ job: Job<Void>, id: ID) throws {
        let run = job.makeRun(parent: nil) { [self] _ in completed(id) }
        let queue = self.queue
        let item = JobQueueStateMachine<ID>.Item(run: run) { run.start(job.body, on: queue) }
        let onStateChange = self.onStateChange
        let observer = StateObserver(queue: resultQueue) { state in onStateChange(id, state) }
        let starts: [JobQueueStateMachine<ID>.Item]
        let drain: Bool
        do {
            // The observer is attached under the queue's lock (taking the run's inside it), so that it
            // hears `pending` first and a refused job is never observed.
            (starts, drain) = try state.withLock { machine in
                (try machine.add(item, id: id), run.attach(observer))
            }
        } catch {
            throw Error.duplicateID(id)
        }
        if drain { observer.scheduleDrain() }
        for item in starts { item.start() }
    }

    /// Cancels the job with `id`, pending or running; does nothing for an unknown or finished id.
    public func cancel(id: ID) {
        state.withLock { $0.run(for: id) }?.cancel()
    }

    /// Cancels every pending and running job.
    public func cancelAll() {
        for run in state.withLock({ $0.allRuns }) { run.cancel() }
    }

    /// Changes how many jobs may run at once, effective at once: raising it starts pending jobs now;
    /// lowering it lets running jobs finish and starts no more until fewer run than the new width.
    public func setMaxConcurrent(_ maxConcurrent: Int) {
        precondition(maxConcurrent >= 1, "JobKit: maxConcurrent must be at least 1, got \(maxConcurrent)")
        for item in state.withLock({ $0.setLimit(maxConcurrent) }) { item.start() }
    }

    /// The current width.
    public var maxConcurrent: Int { state.withLock { $0.limit } }

    /// Ids waiting for a slot, in the order they will start.
    public var pending: [ID] { state.withLock { $0.pending } }

    /// Ids running now, in the order they started.
    public var running: [ID] { state.withLock { $0.running } }

    /// Ids that ended (finished, failed or cancelled), most recent first.
    public var finished: [ID] { state.withLock { $0.finished } }

    private func completed(_ id: ID) {
        let (starts, drained) = state.withLock { $0.completed(id) }
        for item in starts { item.start() }
        if drained { resultQueue.async(execute: onAllFinished) }
    }
}
