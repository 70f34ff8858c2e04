/// Decides the single outcome of a `race`, a `firstSuccess` or a `timeout`, as a value.
///
/// The first member (or timer) to decide wins; every later arrival is ignored. The caller cancels
/// the losers before it completes its own run with the decision, so that their `onCancel` handlers
/// have run by the time anybody hears the outcome.
struct RaceStateMachine<Value> {
    enum Rule {
        /// The first member to complete decides, with a value or an error.
        case firstCompletion
        /// The first success decides; the race fails only when every member failed.
        case firstSuccess
    }

    enum Action {
        case none
        /// Cancel every other member and timer, then complete with `result`.
        case resolve(Result<Value, any Error>)
    }

    let rule: Rule
    private var isDecided = false
    /// Each member's error, in input order (`firstSuccess` only).
    private var errors: [(any Error)?]
    private var failures = 0

    init(rule: Rule, count: Int) {
        self.rule = rule
        self.errors = rule == .firstSuccess ? Array(repeating: nil, count: count) : []
    }

    mutating func memberCompleted(at index: Int, with result: Result<Value, any Error>) -> Action {
        guard !isDecided else { return .none }
        switch (rule, result) {
        case (.firstCompletion, _), (.firstSuccess, .success):
            return decide(result)
        case (.firstSuccess, .failure(let error)):
            if errors[index] == nil { failures += 1 }
            errors[index] = error
            guard failures == errors.count else { return .none }
            return decide(.failure(AllJobsFailed(errors: errors.compactMap { $0 })))
        }
    }

    /// The time limit passed.
    mutating func timerFired() -> Action {
        guard !isDecided else { return .none }
        return decide(.failure(JobError.timedOut))
    }

    private mutating func decide(_ result: Result<Value, any Error>) -> Action {
        isDecided = true
        errors = []
        return .resolve(result)
    }
}

/// One run of a race, a firstSuccess or a timeout: its members are child runs of the combinator's
/// run, and the state machine decides under the lock.
final class RaceExecution<Value: Sendable>: Sendable {
    private let controller: Job<Value>.Controller
    private let children: ChildRuns
    private let state: LockedBox<RaceStateMachine<Value>>

    init(rule: RaceStateMachine<Value>.Rule, count: Int, controller: Job<Value>.Controller) {
        self.controller = controller
        self.children = ChildRuns(of: controller)
        self.state = LockedBox.make(RaceStateMachine(rule: rule, count: count))
    }

    /// Starts `job` as member `index`.
    func start(_ job: Job<Value>, at index: Int, progress: ProgressShare? = nil) {
        children.start(job, progress: progress) { [self] result in
            act(on: state.withLock { $0.memberCompleted(at: index, with: result) })
        }
    }

    /// Fails with `JobError.timedOut` after `limit`, unless a member decides first.
    func startTimer(after limit: Duration, on scheduler: any JobScheduler) {
        children.schedule(after: limit, on: scheduler) { [self] in
            act(on: state.withLock { $0.timerFired() })
        }
    }

    private func act(on action: RaceStateMachine<Value>.Action) {
        guard case .resolve(let result) = action else { return }
        children.cancelAll()
        controller.resolve(result)
    }
}
