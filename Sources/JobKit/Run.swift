import Dispatch

/// What a `JobHandle` needs of a run, whatever its value type.
protocol AnyRun: Sendable {
    var id: ObjectIdentifier { get }
    var state: JobState { get }
    var fraction: Double { get }
    func cancel()
    /// Mirrors progress into `sink` from now on (called with no lock held); returns the current fraction.
    func attachProgress(_ sink: @escaping @Sendable (Double) -> Void) -> Double
}

/// The storage of one run: its state machine and its mutex, in a single allocation.
final class RunStorage<Value: Sendable>: ManagedBuffer<RunStateMachine<Value>, PlatformMutex> {
    deinit {
        withUnsafeMutablePointerToElements { MutexOps.destroy($0) }
    }
}

/// One run of a job.
///
/// Every transition is decided under the lock and acted on after it: cancel handlers, the completion
/// and diagnostics are called with no lock held.
// Safety: the state machine in `storage` is only touched inside `withLock`, which holds its mutex.
struct Run<Value: Sendable>: AnyRun, @unchecked Sendable {
    typealias Completion = RunStateMachine<Value>.Completion

    let storage: RunStorage<Value>

    /// A run whose completion is called exactly once, on whatever thread completes it.
    static func make(completion: @escaping Completion) -> Run<Value> {
        let buffer = RunStorage<Value>.create(minimumCapacity: 1) { _ in RunStateMachine(completion: completion) }
        buffer.withUnsafeMutablePointerToElements { MutexOps.initialize($0) }
        return Run(storage: unsafeDowncast(buffer, to: RunStorage<Value>.self))
    }

    var id: ObjectIdentifier { ObjectIdentifier(storage) }

    @inline(__always)
    private func withLock<Result>(_ body: (inout RunStateMachine<Value>) -> Result) -> Result {
        storage.withLock(body)
    }
    /// Schedules `body` on `queue`. A run cancelled before the block runs never calls `body`.
    @inline(__always)
    func start(_ body: @escaping @Sendable (Job<Value>.Controller) -> Void, on queue: DispatchQueue) {
        queue.async {
            if self.withLock({ $0.start() }) {
                body(Job<Value>.Controller(run: self, queue: queue))
            }
        }
    }

    var state: JobState { withLock { $0.state } }

    var fraction: Double { withLock { $0.fraction } }

    func complete(with result: Result<Value, any Error>) {
        switch withLock({ $0.complete(with: result) }) {
        case .deliver(let completion, let result, let sink):
            sink?(1)
            completion(result)
        case .reportMisuse:
            JobDiagnostics.report(.completedTwice, runID: id)
        case .none:
            break
        }
    }

    func cancel() {
        guard case .cancel(let handlers, let completion) = withLock({ $0.cancel() }) else { return }
        for handler in handlers { handler() }
        completion(.failure(JobError.cancelled))
    }

    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        if case .runNow = withLock({ $0.addCancelHandler(handler) }) { handler() }
    }

    var isCancelled: Bool {
        withLock {
            if case .cancelled = $0.phase { return true }
            return false
        }
    }

    func report(progress fraction: Double) {
        guard !fraction.isNaN else { return }
        if let (sink, fraction) = withLock({ $0.report(progress: fraction) }) { sink(fraction) }
    }

    func attachProgress(_ sink: @escaping @Sendable (Double) -> Void) -> Double {
        withLock { $0.attach(sink) }
    }
}
