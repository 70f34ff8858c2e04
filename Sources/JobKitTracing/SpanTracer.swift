import Dispatch
import JobKit
import Tracing

/// A `JobTracer` that turns every traced run into a span of a swift-distributed-tracing `Tracer`:
/// the tracer your server or app installed (`InstrumentationSystem.tracer`), exported to Jaeger,
/// Tempo or any OpenTelemetry backend by swift-otel, or an in-memory tracer in tests.
///
/// One span per run, nested as the runs are: a group's, collect's, settle's or sequence's members, a
/// chain's steps and each attempt of a `retry` are children of their combinator's span, and a
/// top-level run is a child of the context the `SpanTracer` was made in (the task-local
/// `ServiceContext.current`, such as a request's span). Each span:
/// - is named after the job (`Job.named(_:)`), or `"job"`;
/// - starts when the run is created (`enqueued`), has a `started` event when its body starts, and
///   ends when the run ends;
/// - has the attributes `jobkit.attempt` (which attempt of a `retry`, from 1), `jobkit.outcome`
///   (`finished`, `failed` or `cancelled`) and, for a named job, `jobkit.job.name`;
/// - for a failed run, records the error and has the status `.error`; a cancelled run has a
///   `cancelled` event and no error status.
///
/// A run's body runs with its span as the task-local `ServiceContext.current`: a download's HTTP
/// request (`Job.download`) is a `client` span under its run's span, and so is
/// any span the body starts itself.
///
/// Tracing is opt-in: a job that is not `traced(by:)` pays nothing for it.
///
/// ```swift
/// import JobKit
/// import JobKitTracing
///
/// let spans = SpanTracer()                               // InstrumentationSystem.tracer
/// publish.named("publish").traced(by: spans).perform { result in print(result) }
/// ```
///
/// **Threading.** `record(_:)` is called by JobKit on whatever thread a run changed state; the
/// `SpanTracer` keeps the spans of the runs in flight behind a lock (one entry per run, removed when
/// the run ends) and calls the `Tracer` and its spans with no lock held.
public final class SpanTracer: JobTracer {
    private let tracer: any Tracer
    private let context: ServiceContext
    /// Nanoseconds to add to a monotonic time (`JobTraceEvent.time`) to read the wall clock.
    private let epochOffset: Int64
    /// The spans of the runs that have not ended, by run.
    private let spans = LockedBox.make([UInt64: any Span]())

    /// Creates a tracer whose spans `tracer` makes, top-level runs' spans as children of `context`.
    ///
    /// - Parameters:
    ///   - tracer: the tracer that makes the spans. Defaults to the installed one (read once, here).
    ///   - context: the context top-level runs start in. Defaults to the task-local context of the
    ///     caller (a request's span, say), or a top-level context.
    public init(tracer: any Tracer = InstrumentationSystem.tracer, context: ServiceContext = .current ?? .topLevel) {
        self.tracer = tracer
        self.context = context
        let wall = DefaultTracerClock.now.nanosecondsSinceEpoch
        let monotonic = DispatchTime.now().uptimeNanoseconds
        self.epochOffset = Int64(truncatingIfNeeded: wall &- monotonic)
    }

    /// Starts, annotates or ends the span of the event's run.
    public func record(_ event: JobTraceEvent) {
        switch event.kind {
        case .enqueued:
            start(event)
        case .started:
            spans.withLock { $0[event.runID] }?.addEvent(SpanEvent(name: "started", at: instant(event.time)))
        case .progress:
            break
        case .finished, .failed, .cancelled:
            end(event)
        }
    }

    /// Runs the body of run `runID` with the run's span as the task-local `ServiceContext.current`
    /// (carrying this tracer too): spans the body starts — a download's HTTP request, a `withSpan`
    /// of its own, the task of a `Job(operation:)` — are children of the run's span.
    public func withinRun(_ runID: UInt64, _ body: () -> Void) {
        guard let span = spans.withLock({ $0[runID] }) else { return body() }
        var context = span.context
        context.jobTracer = tracer
        ServiceContext.withValue(context) { body() }
    }

    private func start(_ event: JobTraceEvent) {
        let parent = event.parentID.flatMap { id in spans.withLock { $0[id] } }
        let parentContext = parent?.context ?? context
        let span = tracer.startSpan(
            event.name ?? "job", context: parentContext, ofKind: .internal, at: instant(event.time))
        span.updateAttributes { attributes in
            attributes["jobkit.attempt"] = event.attempt
            if let name = event.name { attributes["jobkit.job.name"] = name }
        }
        spans.withLock { $0[event.runID] = span }
    }

    private func end(_ event: JobTraceEvent) {
        guard let span = spans.withLock({ $0.removeValue(forKey: event.runID) }) else { return }
        let at = instant(event.time)
        switch event.kind {
        case .failed:
            span.attributes["jobkit.outcome"] = "failed"
            if let error = event.error {
                span.recordError(error, attributes: [:], at: at)
                span.setStatus(SpanStatus(code: .error, message: "\(error)"))
            } else {
                span.setStatus(SpanStatus(code: .error))
            }
        case .cancelled:
            span.attributes["jobkit.outcome"] = "cancelled"
            span.addEvent(SpanEvent(name: "cancelled", at: at))
        default:
            span.attributes["jobkit.outcome"] = "finished"
        }
        span.end(at: at)
    }

    /// The wall-clock instant of a monotonic time.
    private func instant(_ time: UInt64) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(bitPattern: Int64(bitPattern: time) &+ epochOffset))
    }
}
