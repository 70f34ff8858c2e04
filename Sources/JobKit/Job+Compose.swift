extension Job {
    /// When this job finishes, runs the job `next` makes from its value; fails with the first error.
    ///
    /// ```swift
    /// let publish = Job.collect(media.map { .uploading($0) })          // Job<[MediaID]>
    ///     .then { ids in .creatingPost(text, mediaIDs: ids) }            // Job<Post>
    /// ```
    ///
    /// Chains are flattened: a chain of any length runs and is released in constant stack. Each step
    /// is a child run (cancelled with the chain), started on the chain's queue.
    public func then<Next>(_ next: @escaping @Sendable (Value) throws -> Job<Next>) -> Job<Next> {
        Job<Next>(chain: chain(adding: .step { try next($0 as! Value).erasedStart }))
    }

    /// Transforms the value; a thrown error fails the job.
    public func map<Next>(_ transform: @escaping @Sendable (Value) throws -> Next) -> Job<Next> {
        Job<Next>(chain: chain(adding: .map { try transform($0 as! Value) }))
    }

    /// When this job fails, runs the job `handler` makes from the error instead. Cancellation is not
    /// a failure to recover from: a cancelled run stays cancelled.
    ///
    /// ```swift
    /// let feed = network.recover { _ in cache.feedJob() }
    /// ```
    public func recover(_ handler: @escaping @Sendable (any Error) throws -> Job<Value>) -> Job<Value> {
        Job { controller in
            let children = ChildRuns(of: controller)
            children.start(self, progress: { $0 }) { result in
                guard case .failure(let error) = result else { return controller.resolve(result) }
                do {
                    children.start(try handler(error)) { controller.resolve($0) }
                } catch {
                    controller.resolve(.failure(error))
                }
            }
        }
    }

    /// Replaces a failure's error, for example to wrap a low-level error in a domain one.
    public func mapError(_ transform: @escaping @Sendable (any Error) -> any Error) -> Job<Value> {
        Job { controller in
            ChildRuns(of: controller).start(self, progress: { $0 }) { result in
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
