/// A job whose value type is erased: what a chain stores, and starts as a child run.
protocol ErasedJob: Sendable {
    /// Starts a run of this job as a child in `children`, its progress filling `progress`.
    func startChild(
        in children: ChildRuns, progress: ProgressShare,
        completion: @escaping @Sendable (Result<any Sendable, any Error>) -> Void)
}

extension Job: ErasedJob {
    func startChild(
        in children: ChildRuns, progress: ProgressShare,
        completion: @escaping @Sendable (Result<any Sendable, any Error>) -> Void
    ) {
        children.start(self, progress: progress) { completion($0.map { $0 as any Sendable }) }
    }

    /// Whether a combinator may hand its own run to this job's body as a tail call: true for
    /// untraced chains and recoveries, whose bodies reach their run only through the controller.
    var runsAsTail: Bool {
        guard let metadata else { return false }
        return metadata.runsAsTail && metadata.name == nil && metadata.tracers.isEmpty
    }
}

/// One link of a flattened `then`/`map` chain: `a.then(f).map(g)` is one job with links
/// `[head a, step f, map g]`, not three nested jobs, so that a chain of a million links is built,
/// run and released in constant stack.
// Safety: `previous` and `storedKind` are written only by `init` and by `deinit`, when this link has
// a single owner.
final class ChainLink: @unchecked Sendable {
    enum Kind {
        /// The first job of the chain.
        case head(any ErasedJob)
        /// A job made from the previous value.
        case step(@Sendable (any Sendable) throws -> any ErasedJob)
        /// A value made from the previous value, applied inline.
        case map(@Sendable (any Sendable) throws -> any Sendable)
    }

    private(set) var previous: ChainLink?
    private var storedKind: Kind?

    /// Set from `init` until `deinit`.
    var kind: Kind { storedKind! }

    init(previous: ChainLink?, kind: Kind) {
        self.previous = previous
        self.storedKind = kind
    }

    deinit {
        // Released in a loop, not recursively: a chain of a million links, or a head that is itself
        // a deep nest of jobs, would otherwise overflow the stack.
        CompletionTrampoline.release(previous.take() as Any)
        CompletionTrampoline.release(storedKind.take() as Any)
    }

    /// The links from the head to this one.
    var links: [Kind] {
        var kinds: [Kind] = []
        var link: ChainLink? = self
        while let current = link {
            kinds.append(current.kind)
            link = current.previous
        }
        return kinds.reversed()
    }
}

extension Job {
    /// A job that runs `link`'s chain and finishes with its last value.
    init(chain link: ChainLink) {
        self.init { controller in ChainExecution(links: link.links, controller: controller).start() }
        metadata = JobMetadata(name: nil, tracers: [], chain: link, runsAsTail: true)
    }

    /// The chain to extend when a link is added to this job: its own, if it is a plain chain.
    func chain(adding kind: ChainLink.Kind) -> ChainLink {
        if let metadata, let chain = metadata.chain, metadata.name == nil, metadata.tracers.isEmpty {
            return ChainLink(previous: chain, kind: kind)
        }
        return ChainLink(previous: ChainLink(previous: nil, kind: .head(self)), kind: kind)
    }
}

/// One run of a chain: each link starts when the previous one finished, as a child run. Maps are
/// applied inline, in a loop; the last step, when it makes a chain or a recovery, is a tail call
/// that hands this run over (`Job.Controller.handOver(to:share:)`), so that a recursive chain holds
/// one level at a time.
final class ChainExecution<Value: Sendable>: Sendable {
    private let controller: Job<Value>.Controller
    private let children: ChildRuns
    private let state: LockedBox<ChainStateMachine>

    init(links: [ChainLink.Kind], controller: Job<Value>.Controller) {
        self.controller = controller
        self.children = ChildRuns(of: controller)
        self.state = LockedBox.make(ChainStateMachine(links: links))
    }

    func start() {
        perform(state.withLock { $0.start() })
    }

    private func perform(_ first: ChainStateMachine.Action) {
        var action = first
        while true {
            switch action {
            case .start(let job, let share):
                return job.startChild(in: children, progress: share) { [self] in linkCompleted(with: $0) }
            case .map(let transform, let value):
                let result = Result { try transform(value) }
                action = state.withLock { $0.linkCompleted(with: result) }
            case .step(let make, let value, let share, let isLast):
                let job: any ErasedJob
                do {
                    job = try make(value)
                } catch {
                    action = state.withLock { $0.linkCompleted(with: .failure(error)) }
                    continue
                }
                if isLast, let tail = job as? Job<Value>, tail.runsAsTail {
                    children.detach()
                    return controller.handOver(to: tail, share: share)
                }
                action = .start(job, share: share)
            case .resolve(.success(let value)):
                // The chain's links were typed by `then`/`map`: the last value is a `Value`.
                return controller.resolve(.success(value as! Value))
            case .resolve(.failure(let error)):
                return controller.resolve(.failure(error))
            }
        }
    }

    private func linkCompleted(with result: Result<any Sendable, any Error>) {
        perform(state.withLock { $0.linkCompleted(with: result) })
    }
}
