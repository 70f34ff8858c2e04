import Dispatch

/// Receives the lifecycle of traced runs: enqueued, started, progress, and how each ended.
///
/// **Threading.** `record(_:)` is called synchronously on the thread where the transition happened, with no
/// lock held, possibly from many threads at once: keep it thread-safe and cheap (append to a buffer). Tracers
/// are retained by every run they trace until that run ends.
///
/// ```swift
/// let trace = ChromeTraceWriter()
/// publish.traced(by: trace).perform { _ in try? trace.write(to: URL(filePath: "publish.json")) }
/// ```
public protocol JobTracer: AnyObject, Sendable {
    /// Receives one event of a traced run.
    ///
    /// Called synchronously on the thread where the run changed state — any thread, concurrently for
    /// runs in parallel — so it must be thread-safe and quick: store the event and return.
    func record(_ event: JobTraceEvent)

    /// Runs `body` — the body of the traced run `runID`, as it starts — inside the scope the tracer
    /// gives that run's code, and returns when `body` returns.
    ///
    /// Called once per traced run, on the run's queue, right after its `started` event was recorded,
    /// with no lock held; `body` must be called exactly once, synchronously. A `SpanTracer` binds the
    /// run's span as the task-local `ServiceContext.current` here, so that the spans the body makes
    /// (a download's HTTP request) are its children. The default runs `body` as it is. With several
    /// tracers, the first one's scope is the outermost.
    func withinRun(_ runID: UInt64, _ body: () -> Void)
}

extension JobTracer {
    /// Runs `body` as it is: a tracer that gives runs no scope of its own.
    public func withinRun(_ runID: UInt64, _ body: () -> Void) {
        body()
    }
}

/// One step in the life of a traced run.
public struct JobTraceEvent: Sendable, Equatable {
    /// What happened to the run.
    public enum Kind: Sendable, Equatable {
        /// The run was created; its body waits for its queue or for a free slot.
        case enqueued
        /// The body started.
        case started
        /// The body reported progress.
        case progress(Double)
        /// The run finished with a value.
        case finished
        /// The run failed with an error.
        case failed
        /// The run was cancelled.
        case cancelled
    }

    /// Unique within the process for the life of the process.
    public let runID: UInt64
    /// The enclosing group's, collect's, settle's or sequence's run; nil for a top-level run.
    public let parentID: UInt64?
    /// The name given with `Job.named(_:)`, if any.
    public let name: String?
    /// What happened.
    public let kind: Kind
    /// Nanoseconds on the monotonic clock (`DispatchTime.uptimeNanoseconds`).
    public let time: UInt64
    /// Which attempt of a `retry` this run is, from 1; 1 for a run that no `retry` started.
    public let attempt: Int
    /// The error a `.failed` run ended with; nil for every other kind.
    public let error: (any Error)?

    init(
        runID: UInt64, parentID: UInt64?, name: String?, kind: Kind, time: UInt64, attempt: Int = 1,
        error: (any Error)? = nil
    ) {
        self.runID = runID
        self.parentID = parentID
        self.name = name
        self.kind = kind
        self.time = time
        self.attempt = attempt
        self.error = error
    }

    /// Whether two events are the same step of the same run; errors are compared by their type and
    /// description (an error need not be `Equatable`).
    public static func == (lhs: JobTraceEvent, rhs: JobTraceEvent) -> Bool {
        lhs.runID == rhs.runID && lhs.parentID == rhs.parentID && lhs.name == rhs.name && lhs.kind == rhs.kind
            && lhs.time == rhs.time && lhs.attempt == rhs.attempt
            && lhs.error.map { String(reflecting: $0) } == rhs.error.map { String(reflecting: $0) }
    }
}

/// A traced run's identity and where its events go.
///
/// A class, so that an untraced run pays one nil pointer for it, not an inline optional of five words.
final class TraceContext: Sendable {
    private static let ids = LockedBox.make(UInt64(0))

    let tracers: [any JobTracer]
    let id: UInt64
    let parentID: UInt64?
    let name: String?
    /// Which attempt of a `retry` the run is, from 1.
    let attempt: Int

    init(tracers: [any JobTracer], id: UInt64, parentID: UInt64?, name: String?, attempt: Int) {
        self.tracers = tracers
        self.id = id
        self.parentID = parentID
        self.name = name
        self.attempt = attempt
    }

    /// The context of a new run, or nil when neither the job nor its parent is traced.
    static func make(for metadata: JobMetadata?, parent: TraceContext?, attempt: Int = 1) -> TraceContext? {
        let tracers = (parent?.tracers ?? []) + (metadata?.tracers ?? [])
        guard !tracers.isEmpty else { return nil }
        let id = ids.withLock { id -> UInt64 in
            id += 1
            return id
        }
        return TraceContext(tracers: tracers, id: id, parentID: parent?.id, name: metadata?.name, attempt: attempt)
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `body` inside every tracer's scope for this run (see `JobTracer.withinRun`).
    func scoped(_ body: () -> Void) {
        scoped(tracers[...], body)
    }

    private func scoped(_ tracers: ArraySlice<any JobTracer>, _ body: () -> Void) {
        guard let first = tracers.first else { return body() }
        first.withinRun(id) { scoped(tracers.dropFirst(), body) }
    }

    /// Reports `state` to every tracer; `error` is the error of a `.failed` state.
    func record(_ state: JobState, at time: UInt64 = now(), error: (any Error)? = nil) {
        let kind: JobTraceEvent.Kind =
            switch state {
            case .pending: .enqueued
            case .running(let fraction): fraction == 0 ? .started : .progress(fraction)
            case .finished: .finished
            case .failed: .failed
            case .cancelled: .cancelled
            }
        let event = JobTraceEvent(
            runID: id, parentID: parentID, name: name, kind: kind, time: time, attempt: attempt,
            error: state == .failed ? error : nil)
        for tracer in tracers { tracer.record(event) }
    }
}

/// What a job carries besides its body: a name and tracers. Shared, immutable; nil on plain jobs.
final class JobMetadata: Sendable {
    let name: String?
    let tracers: [any JobTracer]
    /// The flattened chain this job runs, for `then`/`map` to extend.
    let chain: ChainLink?
    /// Whether the body reaches its run only through its controller, so that a combinator may hand
    /// its own run over to it (see `Job.runsAsTail`).
    let runsAsTail: Bool

    init(name: String?, tracers: [any JobTracer], chain: ChainLink? = nil, runsAsTail: Bool = false) {
        self.name = name
        self.tracers = tracers
        self.chain = chain
        self.runsAsTail = runsAsTail
    }
}

extension Job {
    /// The same job with a name, shown by tracers (`"upload photo 3"`).
    public func named(_ name: String) -> Job {
        var job = self
        job.metadata = JobMetadata(
            name: name, tracers: metadata?.tracers ?? [], chain: metadata?.chain,
            runsAsTail: metadata?.runsAsTail ?? false)
        return job
    }

    /// The same job, with every run (and every member run of a group or sequence) reported to `tracer`.
    public func traced(by tracer: any JobTracer) -> Job {
        var job = self
        job.metadata = JobMetadata(
            name: metadata?.name, tracers: (metadata?.tracers ?? []) + [tracer], chain: metadata?.chain,
            runsAsTail: metadata?.runsAsTail ?? false)
        return job
    }

    /// The name given with `named(_:)`.
    public var name: String? { metadata?.name }
}
