import Dispatch

/// Runs members of a group, collect, settle or sequence on the group's queue, at most `limit` at a
/// time, without ever blocking a thread: a finished member launches the next pending one.
///
/// Members complete inline (no hop through another queue); the next member's body is dispatched
/// asynchronously, so any number of members runs in constant stack.
// Safety: the only mutable state is the state machine inside `state`, touched only under its lock.
final class JobGroup<Element: Sendable>: ProgressComposite, @unchecked Sendable {
    typealias Results = [Result<Element, any Error>]

    /// The members, released iteratively (a member may itself be a deep nest of jobs).
    private let members: Nested<[Job<Element>]>
    private let queue: DispatchQueue
    /// The group's own run's trace context, inherited by its members (read once, not per member).
    private let parentTrace: TraceContext?
    private let state: LockedBox<JobGroupStateMachine<Element>>
    private let onFinish: @Sendable (Results) -> Void
    private let onFail: @Sendable (any Error) -> Void

    private init(
        members: Nested<[Job<Element>]>,
        queue: DispatchQueue,
        parent: any AnyRun,
        machine: JobGroupStateMachine<Element>,
        onFinish: @escaping @Sendable (Results) -> Void,
        onFail: @escaping @Sendable (any Error) -> Void
    ) {
        self.members = members
        self.queue = queue
        self.parentTrace = parent.trace
        self.state = LockedBox.make(machine)
        self.onFinish = onFinish
        self.onFail = onFail
    }

    /// A job that runs `jobs` under `policy` and completes with their results, in input order.
    static func job<Value>(
        _ jobs: [Job<Element>],
        policy: JobGroupStateMachine<Element>.Policy,
        maxConcurrent: Int?,
        keepsResults: Bool,
        transform: @escaping @Sendable (Results) throws -> Value
    ) -> Job<Value> {
        let limit = maxConcurrent ?? max(jobs.count, 1)
        guard limit >= 1 else {
            return .failure(JobError.invalidArgument("maxConcurrent must be at least 1, got \(limit)"))
        }
        let members = Nested(jobs)
        let count = jobs.count
        return Job<Value> { controller in
            let machine = JobGroupStateMachine<Element>(
                policy: policy, count: count, limit: limit, keepsResults: keepsResults)
            let group = JobGroup(
                members: members, queue: controller.queue, parent: controller.run, machine: machine,
                onFinish: { results in controller.complete(with: Result { try transform(results) }) },
                onFail: { error in controller.fail(with: error) })
            controller.onCancel { group.cancel() }
            controller.run.setComposite(group)
            group.start()
        }
    }

    private func start() {
        switch state.withLock({ $0.start() }) {
        case .launch(let range): launch(range)
        case .finish(let results): finish(results)
        }
    }

    /// Every member's child progress is complete before the group's own — a settle member that failed
    /// half way counts as done — so that the group reads exactly 1.0.
    private func finish(_ results: Results) {
        for child in state.withLock({ $0.takeChildReporters() }) { child.complete() }
        onFinish(results)
    }

    private func launch(_ range: Range<Int>) {
        if range.count == 1 { return launch(at: range.lowerBound) }
        let jobs = members.value
        var runs: [Run<Element>] = []
        runs.reserveCapacity(range.count)
        for index in range {
            runs.append(
                jobs[index].makeRun(on: queue, parentTrace: parentTrace, completion: .member(self, index: index)))
        }
        guard let children = state.withLock({ $0.register(runs, from: range.lowerBound) }) else { return }
        if !children.isEmpty {
            for (run, child) in zip(runs, children) { run.adopt(child) }
        }
        for run in runs { run.start() }
    }

    /// The common case of a sequence or a bounded group: one member starts as another ends.
    private func launch(at index: Int) {
        let run = members.value[index].makeRun(
            on: queue, parentTrace: parentTrace, completion: .member(self, index: index))
        switch state.withLock({ $0.register(run, at: index) }) {
        case .drop:
            return
        case .start:
            run.start()
        case .adoptAndStart(let child):
            run.adopt(child)
            run.start()
        }
    }

    /// A member's completion (`RunCompletion.member`): called once per member run, inline.
    func memberCompleted(at index: Int, with result: Result<Element, any Error>) {
        switch state.withLock({ $0.memberCompleted(at: index, with: result) }) {
        case .none:
            break
        case .launch(let range):
            launch(range)
        case .finish(let results):
            finish(results)
        case .fail(let error, let running):
            for member in running { member.cancel() }
            onFail(error)
        }
    }

    private func cancel() {
        for member in state.withLock({ $0.cancel() }) { member.cancel() }
    }

    func attachChildren(to parent: ProgressReporter) {
        let count = members.value.count
        // Foundation on Linux traps on a `totalUnitCount` of 0: an empty group keeps its own units.
        guard count > 0 else { return }
        parent.changing { parent.progress.totalUnitCount = Int64(count) }
        let children = (0..<count).map { index in
            // A cancel of the group's progress reaches every child too, each handler on a thread of
            // its own (Foundation calls them asynchronously): the group's own cancel stops the
            // members, in order, before the group completes; a child's handler stops its member
            // only when that child alone was cancelled.
            let child = ProgressReporter(units: ProgressReporter.leafUnits, tree: parent.tree) {
                [weak self, weak parent] in
                guard parent?.progress.isCancelled != true else { return }
                self?.state.withLock { $0.member(at: index) }?.cancel()
            }
            parent.changing { parent.progress.addChild(child.progress, withPendingUnitCount: 1) }
            return child
        }
        for (child, run) in state.withLock({ $0.install(children) }) {
            if let run { run.adopt(child) } else { child.complete() }
        }
    }
}
