/// The state of one run of a graph, as a value: transitions return what to start or cancel.
struct JobGraphStateMachine<Key: Hashable & Sendable> {
    typealias Outcome = JobGraph<Key>.Outcome

    let limit: Int
    let policy: JobGraph<Key>.FailurePolicy
    private var waitingOn: [Key: Int] = [:]
    private var dependents: [Key: [Key]] = [:]
    private var ready: [Key] = []
    private var running: Set<Key> = []
    private(set) var outcomes: [Key: Outcome] = [:]
    private let count: Int
    private var isStopped = false

    init(graph: JobGraph<Key>, limit: Int, policy: JobGraph<Key>.FailurePolicy) {
        self.limit = limit
        self.policy = policy
        self.count = graph.order.count
        for key in graph.order {
            let dependencies = graph.nodes[key]!.dependencies
            waitingOn[key] = Set(dependencies).count
            for dependency in Set(dependencies) { dependents[dependency, default: []].append(key) }
            if dependencies.isEmpty { ready.append(key) }
        }
    }

    var isComplete: Bool { outcomes.count == count }

    /// Claims ready nodes up to the limit.
    mutating func claimStarts() -> [Key] {
        guard !isStopped else { return [] }
        var starts: [Key] = []
        while running.count < limit, !ready.isEmpty {
            let key = ready.removeFirst()
            running.insert(key)
            starts.append(key)
        }
        return starts
    }

    /// A node ended: returns the nodes to start and the running ones to cancel.
    mutating func completed(_ key: Key, _ outcome: Outcome) -> (start: [Key], cancel: [Key]) {
        guard running.remove(key) != nil else { return ([], []) }
        outcomes[key] = outcome
        if outcome.isFinished {
            for dependent in dependents[key] ?? [] {
                waitingOn[dependent]! -= 1
                if waitingOn[dependent] == 0, outcomes[dependent] == nil { ready.append(dependent) }
            }
            return (claimStarts(), [])
        }
        switch policy {
        case .skipDependents:
            skipDependents(of: key)
            return (claimStarts(), [])
        case .stopAll:
            isStopped = true
            for pending in waitingOn.keys where outcomes[pending] == nil && !running.contains(pending) {
                outcomes[pending] = .skipped
            }
            ready = []
            return ([], Array(running))
        }
    }

    private mutating func skipDependents(of key: Key) {
        var stack = dependents[key] ?? []
        while let dependent = stack.popLast() {
            guard outcomes[dependent] == nil, !running.contains(dependent) else { continue }
            outcomes[dependent] = .skipped
            ready.removeAll { $0 == dependent }
            stack.append(contentsOf: dependents[dependent] ?? [])
        }
    }
}

/// One run of a graph: nodes are child runs of the graph's run.
final class JobGraphExecution<Key: Hashable & Sendable>: Sendable {
    private let graph: JobGraph<Key>
    private let controller: Job<[Key: JobGraph<Key>.Outcome]>.Controller
    private let children: ChildRuns
    private let state: LockedBox<JobGraphStateMachine<Key>>
    private let running = LockedBox.make([Key: any AnyRun]())

    init(
        graph: JobGraph<Key>, limit: Int, policy: JobGraph<Key>.FailurePolicy,
        controller: Job<[Key: JobGraph<Key>.Outcome]>.Controller
    ) {
        self.graph = graph
        self.controller = controller
        self.children = ChildRuns(of: controller)
        self.state = LockedBox.make(JobGraphStateMachine(graph: graph, limit: limit, policy: policy))
    }

    func start() {
        let (starts, isComplete) = state.withLock { ($0.claimStarts(), $0.isComplete) }
        if isComplete { return controller.resolve(.success([:])) }
        for key in starts { launch(key) }
    }

    private func launch(_ key: Key) {
        let job = graph.nodes[key]!.job
        // Each node gets its own cancellable wrapper, so that `stopAll` can cancel exactly the running ones.
        let node = Job<Void> { [running] nodeController in
            running.withLock { $0[key] = nodeController.run }
            ChildRuns(of: nodeController).start(job) { nodeController.resolve($0) }
        }
        children.start(node) { [self] result in
            running.withLock { _ = $0.removeValue(forKey: key) }
            let outcome: JobGraph<Key>.Outcome
            switch result {
            case .success: outcome = .finished
            case .failure(let error as JobError) where error == .cancelled: outcome = .cancelled
            case .failure(let error): outcome = .failed(error)
            }
            let (starts, cancels, outcomes) = state.withLock { machine in
                let (starts, cancels) = machine.completed(key, outcome)
                return (starts, cancels, machine.isComplete ? machine.outcomes : nil)
            }
            for key in cancels { running.withLock { $0[key] }?.cancel() }
            for key in starts { launch(key) }
            if let outcomes { controller.resolve(.success(outcomes)) }
        }
    }
}
