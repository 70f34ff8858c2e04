extension Job {
    /// When this job finishes, runs the job `next` makes from its value; fails with the first error.
    ///
    /// ```swift
    /// let publish = Job.collect(media.map { .uploading($0) })          // Job<[MediaID]>
    ///     .then { ids in .creatingPost(text, mediaIDs: ids) }            // Job<Post>
    /// ```
    ///
    /// Chains are flattened: a chain of any length runs and is released in constant stack. Each step
    /// is a child run (cancelled with the chain), started on the chain's queue; `next` runs on the
    /// thread that completed the previous job, with no lock held.
    ///
    /// Recursion is fine at any depth: when the last step makes another chain (or a `recover`), the
    /// run is handed over to it as a tail call, so a polling or paging loop holds one level at a time.
    /// Its progress then fills what is left of the chain's share each time — it approaches 1.0
    /// geometrically, as a recursion of unknown depth must. A named or traced level is not a tail
    /// call (its run is kept to be traced): it costs memory per level, never stack.
    ///
    /// ```swift
    /// func page(_ n: Int) -> Job<Int> {
    ///     fetch(page: n).then { items in items.isEmpty ? .just(n) : page(n + 1) }
    /// }
    /// ```
    public func then<Next>(_ next: @escaping @Sendable (Value) throws -> Job<Next>) -> Job<Next> {
        Job<Next>(chain: chain(adding: .step { try next($0 as! Value) }))
    }

    /// Transforms the value; a thrown error fails the job.
    public func map<Next>(_ transform: @escaping @Sendable (Value) throws -> Next) -> Job<Next> {
        Job<Next>(chain: chain(adding: .map { try transform($0 as! Value) }))
    }

    /// When this job fails, runs the job `handler` makes from the error instead. Cancellation is not
    /// a failure to recover from: a cancelled run stays cancelled, and `handler` never sees
    /// `JobError.cancelled`.
    ///
    /// `handler` runs on the thread that completed this job, with no lock held. A recovery that is
    /// itself a chain or a `recover` takes over the run as a tail call, so a loop written as
    /// `func attempt() -> Job { op.recover { _ in attempt() } }` runs at any depth in constant memory.
    ///
    /// ```swift
    /// let feed = network.recover { _ in cache.feedJob() }
    /// ```
    public func recover(_ handler: @escaping @Sendable (any Error) throws -> Job<Value>) -> Job<Value> {
        let inner = Nested(self)
        var job = Job { controller in
            let children = ChildRuns(of: controller)
            children.start(inner.value, progress: .whole) { result in
                guard case .recover(let error) = RecoverDecision(result) else { return controller.resolve(result) }
                let recovery: Job<Value>
                do {
                    recovery = try handler(error)
                } catch {
                    return controller.resolve(.failure(error))
                }
                if recovery.runsAsTail {
                    children.detach()
                    controller.handOver(to: recovery, share: .whole)
                } else {
                    children.start(recovery, progress: .whole) { controller.resolve($0) }
                }
            }
        }
        job.metadata = JobMetadata(name: nil, tracers: [], runsAsTail: true)
        return job
    }

    /// Replaces a failure's error, for example to wrap a low-level error in a domain one.
    public func mapError(_ transform: @escaping @Sendable (any Error) -> any Error) -> Job<Value> {
        let inner = Nested(self)
        return Job { controller in
            ChildRuns(of: controller).start(inner.value, progress: .whole) { result in
                controller.resolve(
                    result.mapError { error in
                        (error as? JobError) == .cancelled ? error : transform(error)
                    })
            }
        }
    }

    /// Discards the value.
    public func asVoid() -> Job<Void> {
        map { _ in () }
    }
}

/// What `recover` does with its job's outcome: pass it on, or recover from the error. A cancellation
/// is passed on, never recovered from.
enum RecoverDecision {
    case passOn
    case recover(any Error)

    init<Value>(_ result: Result<Value, any Error>) {
        switch result {
        case .success: self = .passOn
        case .failure(let error as JobError) where error == .cancelled: self = .passOn
        case .failure(let error): self = .recover(error)
        }
    }
}
