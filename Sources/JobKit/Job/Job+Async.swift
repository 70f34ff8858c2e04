import Dispatch

extension Job {
    /// A job whose body is async code.
    ///
    /// Each run starts an unstructured Swift task; cancelling the run cancels that task, and the run
    /// completes with `JobError.cancelled` at once (not with the `CancellationError` the task may
    /// throw later).
    ///
    /// ```swift
    /// let feed = Job<[Music]> { try await api.newMusic() }
    /// ```
    public init(operation: @escaping @Sendable () async throws -> Value) {
        self.init { controller in
            let task = Task {
                do {
                    controller.finish(try await operation())
                } catch {
                    controller.fail(with: error)
                }
            }
            controller.onCancel { task.cancel() }
        }
    }

    /// Performs a new run on the global queue and awaits its value.
    ///
    /// Cancelling the awaiting Swift task cancels the run, which then throws `JobError.cancelled`;
    /// awaiting in an already-cancelled task cancels the run before its body starts.
    public var value: Value {
        get async throws {
            let slot = RunSlot()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let run = makeRun(on: .global(), parent: nil) { continuation.resume(with: $0) }
                    slot.store(run)  // cancels it at once if the task is already cancelled
                    run.start()
                }
            } onCancel: {
                slot.cancel()
            }
        }
    }
}

/// Hands a run to a cancellation handler that may fire before, during or after the run is created.
// Safety: `state` is only touched under its lock.
final class RunSlot: @unchecked Sendable {
    private enum State {
        case empty
        case stored(any AnyRun)
        case cancelled
    }

    private let state = LockedBox<State>.make(.empty)

    func store(_ run: any AnyRun) {
        let cancelNow = state.withLock { state -> Bool in
            if case .cancelled = state { return true }
            state = .stored(run)
            return false
        }
        if cancelNow { run.cancel() }
    }

    func cancel() {
        let run = state.withLock { state -> (any AnyRun)? in
            defer { state = .cancelled }
            if case .stored(let run) = state { return run }
            return nil
        }
        run?.cancel()
    }
}
