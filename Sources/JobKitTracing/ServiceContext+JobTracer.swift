import Tracing

/// The key of the tracer that made a run's span, in the context a `SpanTracer` gives the run's body.
private enum JobTracerKey: ServiceContextKey {
    typealias Value = any Tracer
    static var nameOverride: String? { "jobkit-tracer" }
}

extension ServiceContext {
    /// The tracer that made the span of the run whose body this is (set by `SpanTracer`): the one
    /// that makes the spans nested under it, such as a download's HTTP request. Never propagated
    /// out of the process.
    package var jobTracer: (any Tracer)? {
        get { self[JobTracerKey.self] }
        set { self[JobTracerKey.self] = newValue }
    }
}
