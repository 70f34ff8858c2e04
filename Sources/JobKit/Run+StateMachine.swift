/// The state of one run, as a value: every transition is a mutating method that returns what to do
/// once the lock is released. It never calls out.
struct RunStateMachine<Value: Sendable> {
    typealias Completion = @Sendable (Result<Value, any Error>) -> Void
    typealias ProgressSink = @Sendable (Double) -> Void

    enum Phase {
        case pending
        case running(fraction: Double)
        case finished
        case failed
        /// `bodyCompleted` remembers a `finish`/`fail` that arrived after cancellation, so that a
        /// second one can still be reported as a misuse.
        case cancelled(bodyCompleted: Bool)
    }

    private(set) var phase: Phase = .pending
    private var completion: Completion?
    private var cancelHandlers: [@Sendable () -> Void] = []
    private var misuseReported = false
    /// Where progress goes once somebody asked for `JobHandle.progress`.
    private var progressSink: ProgressSink?

    init(completion: @escaping Completion) {
        self.completion = completion
    }

    var state: JobState {
        switch phase {
        case .pending: .pending
        case .running(let fraction): .running(fraction: fraction)
        case .finished: .finished
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }

    var fraction: Double {
        switch phase {
        case .pending, .failed, .cancelled: 0
        case .running(let fraction): fraction
        case .finished: 1
        }
    }

    // MARK: Transitions

    /// The body is about to run. Returns `false` when the run was cancelled first: the body must not run.
    mutating func start() -> Bool {
        switch phase {
        case .pending:
            phase = .running(fraction: 0)
            return true
        case .cancelled:
            return false
        case .running, .finished, .failed:
            preconditionFailure("JobKit: a run was started twice")
        }
    }

    enum CompleteAction {
        /// Deliver the result to the completion (after moving the sink, if any, to 1.0 on success);
        /// the new state is final.
        case deliver(Completion, Result<Value, any Error>, ProgressSink?)
        /// The run had already completed; this is the body's second `finish`/`fail`.
        case reportMisuse
        case none
    }

    mutating func complete(with result: Result<Value, any Error>) -> CompleteAction {
        switch phase {
        case .pending, .running:
            let isSuccess: Bool
            if case .success = result { isSuccess = true } else { isSuccess = false }
            phase = isSuccess ? .finished : .failed
            cancelHandlers = []
            let sink = progressSink
            progressSink = nil
            return .deliver(takeCompletion(), result, isSuccess ? sink : nil)
        case .cancelled(bodyCompleted: false):
            phase = .cancelled(bodyCompleted: true)
            return .none
        case .finished, .failed, .cancelled(bodyCompleted: true):
            guard !misuseReported else { return .none }
            misuseReported = true
            return .reportMisuse
        }
    }

    enum CancelAction {
        /// Run the handlers (in registration order), then deliver `JobError.cancelled`.
        case cancel(handlers: [@Sendable () -> Void], completion: Completion)
        case none
    }

    mutating func cancel() -> CancelAction {
        switch phase {
        case .pending, .running:
            phase = .cancelled(bodyCompleted: false)
            progressSink = nil
            let handlers = cancelHandlers
            cancelHandlers = []
            return .cancel(handlers: handlers, completion: takeCompletion())
        case .finished, .failed, .cancelled:
            return .none
        }
    }

    enum AddCancelHandlerAction {
        case runNow
        case none
    }

    mutating func addCancelHandler(_ handler: @escaping @Sendable () -> Void) -> AddCancelHandlerAction {
        switch phase {
        case .pending, .running:
            cancelHandlers.append(handler)
            return .none
        case .cancelled:
            return .runNow
        case .finished, .failed:
            return .none
        }
    }

    /// Records progress; returns where to send the new fraction, or `nil` if nothing changed.
    mutating func report(progress fraction: Double) -> (ProgressSink, Double)? {
        guard case .running(let current) = phase else { return nil }
        let clamped = min(max(fraction, 0), 1)
        guard clamped > current else { return nil }
        phase = .running(fraction: clamped)
        return progressSink.map { ($0, clamped) }
    }

    /// Attaches the sink that mirrors progress from now on; returns the fraction to start it at.
    mutating func attach(_ sink: @escaping ProgressSink) -> Double {
        switch phase {
        case .pending, .running: progressSink = sink
        case .finished, .failed, .cancelled: break
        }
        return fraction
    }

    private mutating func takeCompletion() -> Completion {
        guard let completion else { preconditionFailure("JobKit: a run completed twice") }
        self.completion = nil
        return completion
    }
}
