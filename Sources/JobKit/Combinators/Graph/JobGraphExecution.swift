/// The state of one run of a graph, as a value: which nodes wait, run and ended. Every transition
/// returns what to start, cancel or report once the lock is released; it never calls out.
struct JobGraphStateMachine<Key: Hashable & Sendable> {
    typealias Outcome = JobGraph<Key>.Outcome

    let limit: Int
    let policy: JobGraph<Key>.FailurePolicy
    private var waitingOn: [Key: Int] = [:]
    private var dependents: [Key: [Key]] = [:]
    private var ready: [Key] = []
    private var readyHead = 0
    /// Claimed nodes: their run once it exists (nil between the claim and the run's creation).
    private var running: [Key: (any AnyRun)?] = [:]
    private(set) var outcomes: [Key: Outcome] = [:]
    private let count: Int
    private var isStopped = false
    private var isDone = false

    init(graph: JobGraph<Key>, limit: Int, policy: JobGraph<Key>.FailurePolicy) {
        self.limit = limit
        self.policy = policy
        self.count = graph.order.count
        for key in graph.order {
            let dependencies = Set(graph.nodes[key]?.dependencies ?? [])
            waitingOn[key] = dependencies.count
            for dependency in dependencies { dependents[dependency, default: []].append(key) }
            if dependencies.isEmpty { ready.append(key) }
        }
    }

    struct Action {
        /// Nodes to create and start (each then `register`ed).
        var launch: [Key] = []
        /// Runs to cancel.
        var cancel: [any AnyRun] = []
        /// Every node has an outcome: complete the graph's run with them.
        var finish: [Key: Outcome]?
    }

    /// The graph's run started.
    mutating func start() -> Action {
        finishIfComplete(Action(launch: claimStarts()))
    }

    /// The run of a claimed node was created. Returns `true` when it must start; `false` when the
    /// graph stopped meanwhile — the node is then `skipped`, and `action` may finish the graph.
    mutating func register(_ run: any AnyRun, for key: Key) -> (start: Bool, action: Action) {
        guard running[key] != nil else { return (false, Action()) }
        guard !isStopped else {
            running[key] = nil
            outcomes[key] = .skipped
            return (false, finishIfComplete(Action()))
        }
        running[key] = .some(run)
        return (true, Action())
    }

    /// A node's run ended.
    mutating func completed(_ key: Key, _ outcome: Outcome) -> Action {
        guard running.removeValue(forKey: key) != nil else { return Action() }
        outcomes[key] = outcome
        if outcome.isFinished {
            for dependent in dependents[key] ?? [] {
                waitingOn[dependent, default: 0] -= 1
                if waitingOn[dependent] == 0, outcomes[dependent] == nil { ready.append(dependent) }
            }
            return finishIfComplete(Action(launch: claimStarts()))
        }
        switch policy {
        case .skipDependents:
            skipDependents(of: key)
            return finishIfComplete(Action(launch: claimStarts()))
        case .stopAll:
            return finishIfComplete(Action(cancel: stop()))
        }
    }

    /// The graph's own run was cancelled: returns the runs to cancel.
    mutating func cancel() -> [any AnyRun] {
        isDone = true
        return stop()
    }

    /// Starts nothing more: every node not claimed is skipped; returns the claimed runs to cancel
    /// (a claimed node whose run does not exist yet is skipped when it registers).
    private mutating func stop() -> [any AnyRun] {
        isStopped = true
        for key in waitingOn.keys where outcomes[key] == nil && running[key] == nil {
            outcomes[key] = .skipped
        }
        ready = []
        readyHead = 0
        return running.values.compactMap { $0 }
    }

    private mutating func claimStarts() -> [Key] {
        guard !isStopped else { return [] }
        var starts: [Key] = []
        while running.count < limit, readyHead < ready.count {
            let key = ready[readyHead]
            readyHead += 1
            guard outcomes[key] == nil else { continue }  // skipped while it was ready
            running[key] = .some(nil)
            starts.append(key)
        }
        return starts
    }

    private mutating func skipDependents(of key: Key) {
        var stack = dependents[key] ?? []
        while let dependent = stack.popLast() {
            guard outcomes[dependent] == nil, running[dependent] == nil else { continue }
            outcomes[dependent] = .skipped
            stack.append(contentsOf: dependents[dependent] ?? [])
        }
    }

    private mutating func finishIfComplete(_ action: Action) -> Action {
        guard !isDone, outcomes.count == count else { return action }
        isDone = true
        var action = action
        action.finish = outcomes
        return action
    }
}

/// One run of a graph: nodes are child runs of the graph's run, created, registered and cancelled
/// through one state machine under one lock — so `stopAll` reaches a node claimed a moment ago too.
final class JobGraphExecution<Key: Hashable & Sendable>: Sendable {
    private let graph: JobGraph<Key>
    private let controller: Job<[Key: JobGraph<Key>.Outcome]>.Controller
    private let state: LockedBox<JobGraphStateMachine<Key>>

    init(
        graph: JobGraph<Key>, limit: Int, policy: JobGraph<Key>.FailurePolicy,
        controller: Job<[Key: JobGraph<Key>.Outcome]>.Controller
    ) {
        self.graph = graph
        self.controller = controller
        self.state = LockedBox.make(JobGraphStateMachine(graph: graph, limit: limit, policy: policy))
    }

    func start() {
        controller.onCancel { [self] in
            for run in state.withLock({ $0.cancel() }) { run.cancel() }
        }
        act(on: state.withLock { $0.start() })
    }

    private func act(on action: JobGraphStateMachine<Key>.Action) {
        for run in action.cancel { run.cancel() }
        for key in action.launch { launch(key) }
        if let outcomes = action.finish { controller.resolve(.success(outcomes)) }
    }

    private func launch(_ key: Key) {
        guard let job = graph.nodes[key]?.job else { return }
        let run = job.makeRun(on: controller.queue, parent: controller.run) { [self] result in
            let outcome: JobGraph<Key>.Outcome
            switch result {
            case .success: outcome = .finished
            case .failure(let error as JobError) where error == .cancelled: outcome = .cancelled
            case .failure(let error): outcome = .failed(error)
            }
            act(on: state.withLock { $0.completed(key, outcome) })
        }
        let (start, action) = state.withLock { $0.register(run, for: key) }
        if start { run.start() }
        act(on: action)
    }
}
