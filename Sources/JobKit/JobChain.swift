/// Starts a run of some job, whatever its value type, as a child of a combinator's run.
typealias ErasedStart =
    @Sendable (
        ChildRuns, _ progress: (@Sendable (Double) -> Double)?,
        @escaping @Sendable (Result<any Sendable, any Error>) -> Void
    ) -> Void

extension Job {
    /// This job as an `ErasedStart`.
    var erasedStart: ErasedStart {
        { children, progress, completion in
            children.start(self, progress: progress) { completion($0.map { $0 as any Sendable }) }
        }
    }
}

/// One link of a flattened `then`/`map` chain: `a.then(f).map(g)` is one job with links
/// `[head a, step f, map g]`, not three nested jobs, so that a chain of a million links is built,
/// run and released in constant stack.
// Safety: `previous` is written only by `init` and by `deinit`, when this link has a single owner.
final class ChainLink: @unchecked Sendable {
    enum Kind {
        /// The first job of the chain.
        case head(ErasedStart)
        /// A job made from the previous value.
        case step(@Sendable (any Sendable) throws -> ErasedStart)
        /// A value made from the previous value, applied inline.
        case map(@Sendable (any Sendable) throws -> any Sendable)
    }

    private(set) var previous: ChainLink?
    let kind: Kind

    init(previous: ChainLink?, kind: Kind) {
        self.previous = previous
        self.kind = kind
    }

    deinit {
        // Release the links before this one iteratively: a recursive release of a million links
        // would overflow the stack.
        var next = previous.take()
        while next != nil, isKnownUniquelyReferenced(&next) {
            next = next!.previous.take()
        }
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
        metadata = JobMetadata(name: nil, tracers: [], chain: link)
    }

    /// The chain to extend when a link is added to this job: its own, if it is a plain chain.
    func chain(adding kind: ChainLink.Kind) -> ChainLink {
        if let metadata, let chain = metadata.chain, metadata.name == nil, metadata.tracers.isEmpty {
            return ChainLink(previous: chain, kind: kind)
        }
        return ChainLink(previous: ChainLink(previous: nil, kind: .head(erasedStart)), kind: kind)
    }
}

/// One run of a chain: each link starts when the previous one finished, as a child run.
final class ChainExecution<Value: Sendable>: Sendable {
    private let links: [ChainLink.Kind]
    private let controller: Job<Value>.Controller
    private let children: ChildRuns
    /// How many links run a job (the head and the steps): each is an equal share of the progress.
    private let jobCount: Int

    init(links: [ChainLink.Kind], controller: Job<Value>.Controller) {
        self.links = links
        self.controller = controller
        self.children = ChildRuns(of: controller)
        self.jobCount = links.count { if case .map = $0 { false } else { true } }
    }

    func start() {
        guard case .head(let start) = links.first else { preconditionFailure("JobKit: a chain without a head") }
        start(children, share(0)) { [self] in proceed(from: 1, jobsDone: 1, with: $0) }
    }

    /// Maps the progress of job number `done` (0-based) to the chain's.
    private func share(_ done: Int) -> @Sendable (Double) -> Double {
        let count = Double(jobCount)
        return { (Double(done) + $0) / count }
    }

    /// Continues after link `index - 1` completed with `result`. Maps are applied inline, in a loop;
    /// a step starts a child run, whose completion calls this again from a fresh stack.
    private func proceed(from index: Int, jobsDone: Int, with result: Result<any Sendable, any Error>) {
        var index = index
        var value: any Sendable
        switch result {
        case .success(let success): value = success
        case .failure(let error): return controller.resolve(.failure(error))
        }
        while index < links.count {
            do {
                switch links[index] {
                case .head: preconditionFailure("JobKit: a chain with two heads")
                case .map(let transform):
                    value = try transform(value)
                    index += 1
                case .step(let makeStart):
                    let start = try makeStart(value)
                    let next = index + 1
                    return start(children, share(jobsDone)) { [self] in
                        proceed(from: next, jobsDone: jobsDone + 1, with: $0)
                    }
                }
            } catch {
                return controller.resolve(.failure(error))
            }
        }
        controller.resolve(.success(value as! Value))
    }
}
