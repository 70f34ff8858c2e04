import Dispatch

/// A unit of asynchronous work that completes once with a `Value` or an error.
///
/// **Threading.** A `Job` is an immutable `Sendable` value: make, compose and perform it from any thread.
/// Each run's body is called on the `queue` given to `perform` (a global queue by default) and its completion
/// handler exactly once: on the main queue, typed `@MainActor`, unless the caller names a `resultQueue`
/// (then a `@Sendable` handler runs there). The body may call its `Controller` from any thread.
///
/// A job is a recipe: creating one does nothing. Each `perform` starts a new, independent run, so a
/// job can be performed many times, composed into groups and sequences, or awaited from async code.
///
/// ```swift
/// let upload = Job<Void> { controller in
///     uploader.upload(photo) { error in
///         if let error { controller.fail(with: error) } else { controller.finish() }
///     }
/// }
/// upload.perform { result in print(result) }      // on the main queue, on the main actor
/// ```
public struct Job<Value: Sendable>: Sendable {
    /// What each run performs: the body, erased once here (`RunBody`), so that a run's storage takes
    /// it as it is — no closure is made around it, and copying it into a run is one retain.
    let body: RunBody
    var metadata: JobMetadata?

    /// Creates a job from a body that completes its run through the controller.
    ///
    /// The body runs once per run, on the queue the run was started on. It must eventually call
    /// `finish`, `fail(with:)` or `complete(with:)` exactly once, from any thread; calls after the first
    /// are ignored (and reported in debug builds through `JobDiagnostics`). After a cancellation the
    /// body's own completion is ignored.
    public init(_ body: @escaping @Sendable (Controller) -> Void) {
        self.body = RunBody(body)
    }

    /// Calls the body with `controller`, on this thread: a body that runs another job's body in its
    /// own run.
    @inline(__always)
    func callBody(_ controller: Controller) {
        body.call(controller.base)
    }

    /// Starts a run: the body runs on `queue`, and `handler` runs exactly once, on the main queue —
    /// typed `@MainActor`, so a main-actor screen touches its own state in it as written.
    ///
    /// ```swift
    /// @MainActor final class ProductScreen {
    ///     var title = ""
    ///     func show(_ id: Int) {
    ///         loader.loadProduct(id: id).perform { result in   // on the main queue, on the main actor
    ///             self.title = (try? result.get().title) ?? "Unavailable"
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// By the time `handler` runs, the handle's `state` is final, and its `progress` reads 1.0 if the
    /// run succeeded. The handler is retained until it has run. A command-line tool must service the
    /// main queue (`dispatchMain()`, `RunLoop.main.run()` or an async `main`), or name another queue
    /// with `perform(on:resultQueue:then:)`, whose handler is `@Sendable`.
    ///
    /// - Parameters:
    ///   - queue: where the body runs (and, for groups and sequences, their members).
    ///   - handler: receives the outcome, on the main queue (the main actor); `JobError.cancelled` after
    ///     `JobHandle.cancel()`.
    /// - Returns: a handle to observe or cancel this run. The run goes on whether or not it is kept.
    @discardableResult
    public func perform(
        on queue: DispatchQueue = .global(),
        then handler: @escaping @MainActor @Sendable (Result<Value, any Error>) -> Void
    ) -> JobHandle {
        let run = makeRun(
            on: queue, parentTrace: nil,
            completion: .handler(MainQueueCall.nonisolated(handler), resultQueue: mainQueue))
        run.start()
        return JobHandle(run: run)
    }

    /// Starts a run: the body runs on `queue`, and `handler` runs exactly once, on `resultQueue` — a
    /// queue the caller names, so the handler is `@Sendable`. `perform(on:then:)` delivers on the main
    /// queue, to a `@MainActor` handler.
    ///
    /// ```swift
    /// job.perform(resultQueue: DispatchQueue(label: "results")) { result in cache.store(result) }
    /// ```
    ///
    /// By the time `handler` runs, the handle's `state` is final, and its `progress` reads 1.0 if the
    /// run succeeded. The handler is retained until it has run. Naming `.main` delivers on the main
    /// queue, still to a `@Sendable` handler; a main-actor caller wants `perform(on:then:)`.
    ///
    /// - Parameters:
    ///   - queue: where the body runs (and, for groups and sequences, their members).
    ///   - resultQueue: where `handler` runs.
    ///   - handler: receives the outcome; `JobError.cancelled` after `JobHandle.cancel()`.
    /// - Returns: a handle to observe or cancel this run. The run goes on whether or not it is kept.
    @discardableResult
    public func perform(
        on queue: DispatchQueue = .global(),
        resultQueue: DispatchQueue,
        then handler: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> JobHandle {
        let run = makeRun(on: queue, parentTrace: nil, completion: .handler(handler, resultQueue: resultQueue))
        run.start()
        return JobHandle(run: run)
    }

    /// Makes a run of this job on `queue` (not started) whose completion is called inline, on
    /// whatever thread completes it; `parent` is the run of the enclosing combinator, and `attempt`
    /// which attempt of a `retry` the run is, for tracing.
    @inline(__always)
    func makeRun(
        on queue: DispatchQueue, parent: (any AnyRun)?, attempt: Int = 1,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Run<Value> {
        makeRun(on: queue, parentTrace: parent?.trace, completion: .call(completion), attempt: attempt)
    }

    /// Like `makeRun(on:parent:completion:)`, with the parent's trace context already read.
    @inline(__always)
    func makeRun(
        on queue: DispatchQueue, parentTrace: TraceContext?,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Run<Value> {
        makeRun(on: queue, parentTrace: parentTrace, completion: .call(completion))
    }

    /// Like `makeRun(on:parentTrace:completion:)`, with the completion's kind chosen by the caller.
    @inline(__always)
    func makeRun(
        on queue: DispatchQueue, parentTrace: TraceContext?, completion: RunCompletion<Value>, attempt: Int = 1
    ) -> Run<Value> {
        let trace =
            metadata == nil && parentTrace == nil
            ? nil : TraceContext.make(for: metadata, parent: parentTrace, attempt: attempt)
        return Run<Value>.make(body: body, queue: queue, trace: trace, completion: completion)
    }

    /// Starts a run whose completion is called inline. The building block of every combinator: members
    /// never hop through another queue to report.
    @inline(__always)
    func start(
        on queue: DispatchQueue, parent: (any AnyRun)?,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Run<Value> {
        let run = makeRun(on: queue, parent: parent, completion: completion)
        run.start()
        return run
    }
}

extension Job {
    /// A job that finishes at once with `value`.
    public static func just(_ value: Value) -> Job {
        Job { $0.finish(value) }
    }

    /// A job that fails at once with `error`.
    public static func failure(_ error: any Error) -> Job {
        Job { $0.fail(with: error) }
    }

    /// Adapts a completion-handler API that reports a `Result`.
    ///
    /// ```swift
    /// let load = Job<Product>.wrapping { done in loader.loadProduct(withID: id, completionHandler: done) }
    /// ```
    public static func wrapping(
        _ call: @escaping @Sendable (_ done: @escaping @Sendable (Result<Value, any Error>) -> Void) -> Void
    ) -> Job {
        Job { controller in call { controller.complete(with: $0) } }
    }
}

extension Job where Value == Void {
    /// A job that finishes at once.
    public static var empty: Job { Job { $0.finish() } }

    /// Adapts a completion-handler API that reports an optional error (`nil` means success).
    ///
    /// ```swift
    /// extension Job where Value == Void {
    ///     static func uploading(_ photo: Photo, using uploader: Uploader) -> Job {
    ///         .wrapping { done in uploader.upload(photo, then: done) }
    ///     }
    /// }
    /// ```
    public static func wrapping(
        _ call: @escaping @Sendable (_ done: @escaping @Sendable ((any Error)?) -> Void) -> Void
    ) -> Job {
        Job { controller in
            call { error in
                if let error { controller.fail(with: error) } else { controller.finish() }
            }
        }
    }
}
