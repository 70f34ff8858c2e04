import Dispatch

/// The runs and timers a combinator started on behalf of its own run: all are cancelled with it, and
/// none starts after it was cancelled.
final class ChildRuns: Sendable {
    private struct State {
        var isCancelled = false
        var nextToken = 0
        var runs: [Int: any AnyRun] = [:]
        var timers: [Int: ScheduledAction] = [:]
        /// Removes the parent's cancel handler (see `detach()`).
        var cancelToken: Int?

        mutating func takeToken() -> Int? {
            guard !isCancelled else { return nil }
            nextToken += 1
            return nextToken
        }
    }

    private let state = LockedBox.make(State())
    /// The combinator's own run: the parent of every child, for tracing.
    let parent: any AnyRun
    let queue: DispatchQueue
    /// The share of the parent's progress that its controller owns.
    private let parentShare: ProgressShare

    /// Children of `controller`'s run, cancelled when it is.
    init<Value>(of controller: Job<Value>.Controller) {
        parent = controller.run
        queue = controller.queue
        parentShare = controller.share
        let token = controller.run.onCancel { [self] in cancelAll() }
        state.withLock { $0.cancelToken = token }
    }

    /// Stops listening for the parent's cancellation, releasing this object — before a tail call
    /// hands the parent's run to another body. Call it only when no child runs and no timer waits.
    func detach() {
        if let token = state.withLock({ $0.cancelToken.take() }) { parent.removeCancelHandler(token: token) }
    }

    /// Starts a run of `job` on the parent's queue; `completion` is called inline, once, unless the
    /// parent was cancelled first (then the child never starts).
    ///
    /// - Parameters:
    ///   - progress: the share of the parent's progress the child's fills; nil leaves the parent's
    ///     progress alone.
    ///   - attempt: which attempt of a `retry` the child is, for tracing.
    func start<Value>(
        _ job: Job<Value>, progress: ProgressShare? = nil, attempt: Int = 1,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) {
        guard let token = state.withLock({ $0.takeToken() }) else { return }
        let run = job.makeRun(on: queue, parent: parent, attempt: attempt) { [self] result in
            state.withLock { _ = $0.runs.removeValue(forKey: token) }
            completion(result)
        }
        let isLive = state.withLock { state -> Bool in
            guard !state.isCancelled else { return false }
            state.runs[token] = run
            return true
        }
        if let progress, isLive {
            let (parent, share) = (self.parent, parentShare.then(progress))
            run.forwardProgress { parent.report(progress: share.map($0)) }
        }
        if isLive { run.start() }
    }

    /// Runs `action` after `delay` on `scheduler`, unless the parent is cancelled first.
    func schedule(after delay: Duration, on scheduler: any JobScheduler, _ action: @escaping @Sendable () -> Void) {
        // A placeholder first: the timer may fire before `schedule` returns.
        let token = state.withLock { state -> Int? in
            let token = state.takeToken()
            if let token { state.timers[token] = ScheduledAction {} }
            return token
        }
        guard let token else { return }
        let timer = scheduler.schedule(after: delay) { [self] in
            let isLive = state.withLock { !$0.isCancelled && $0.timers.removeValue(forKey: token) != nil }
            if isLive { action() }
        }
        let cancelNow = state.withLock { state -> Bool in
            guard !state.isCancelled else { return true }
            if state.timers[token] != nil { state.timers[token] = timer }
            return false
        }
        if cancelNow { timer.cancel() }
    }

    /// Cancels every child run and timer; later `start`s and `schedule`s do nothing.
    func cancelAll() {
        let (runs, timers) = state.withLock { state -> ([any AnyRun], [ScheduledAction]) in
            guard !state.isCancelled else { return ([], []) }
            state.isCancelled = true
            defer { state.runs = [:]; state.timers = [:] }
            return (Array(state.runs.values), Array(state.timers.values))
        }
        for timer in timers { timer.cancel() }
        for run in runs { run.cancel() }
    }
}
