/// Where one run of a chain is, as a value: which link comes next and how much of the progress is
/// done. Each transition returns what to do next; it never calls out, so user closures (`map`'s
/// transform, `then`'s step) run after the lock is released.
struct ChainStateMachine {
    enum Action {
        /// Start `job` as a child run, filling `share` of the chain's progress; call
        /// `linkCompleted(with:)` with its result.
        case start(any ErasedJob, share: ProgressShare)
        /// Apply `transform` to `value` inline and call `linkCompleted(with:)` with the outcome.
        case map(@Sendable (any Sendable) throws -> any Sendable, value: any Sendable)
        /// Make the next job from `value`, then start it (or hand the run over to it, if `isLast`).
        case step(
            @Sendable (any Sendable) throws -> any ErasedJob, value: any Sendable, share: ProgressShare,
            isLast: Bool)
        /// Complete the chain's run.
        case resolve(Result<any Sendable, any Error>)
    }

    private let links: [ChainLink.Kind]
    /// How many links run a job (the head and the steps): each is an equal share of the progress.
    private let jobCount: Int
    /// The link that runs or applies now.
    private var index = 0
    private var jobsDone = 0
    private var isDone = false

    init(links: [ChainLink.Kind]) {
        self.links = links
        self.jobCount = links.count { if case .map = $0 { false } else { true } }
    }

    /// The chain's run started: start its head.
    mutating func start() -> Action {
        guard case .head(let job) = links.first else { preconditionFailure("JobKit: a chain without a head") }
        return .start(job, share: share())
    }

    /// The current link completed with `result` (a child run ended, a map was applied, or a step
    /// threw): returns the next thing to do.
    mutating func linkCompleted(with result: Result<any Sendable, any Error>) -> Action {
        precondition(!isDone, "JobKit: a chain link completed after the chain")
        if case .head = links[index] { jobsDone += 1 } else if case .step = links[index] { jobsDone += 1 }
        index += 1
        guard case .success(let value) = result, index < links.count else {
            isDone = true
            return .resolve(result)
        }
        switch links[index] {
        case .head:
            preconditionFailure("JobKit: a chain with two heads")
        case .map(let transform):
            return .map(transform, value: value)
        case .step(let make):
            return .step(make, value: value, share: share(), isLast: index == links.count - 1)
        }
    }

    /// The share of the chain's progress of the job that runs next.
    private func share() -> ProgressShare {
        let count = Double(jobCount)
        return ProgressShare(offset: Double(jobsDone) / count, scale: 1 / count)
    }
}
