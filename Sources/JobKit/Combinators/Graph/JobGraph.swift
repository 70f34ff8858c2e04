/// Named jobs with dependencies, run as one job: each node starts when every node it depends on has
/// finished, at most `maxConcurrent` at once.
///
/// **Threading.** A `Sendable` value: build it on one thread (`add` is `mutating`), then make its job from
/// any thread; the nodes run as the job's runs do (bodies on their queue, the report on the handler's
/// `resultQueue`).
///
/// ```swift
/// var graph = JobGraph<String>()
/// try graph.add("photos", uploadPhotos)
/// try graph.add("videos", uploadVideos)
/// try graph.add("post", dependsOn: ["photos", "videos"], uploadPost)
/// let report = try await graph.job(maxConcurrent: 2).value   // ["post": .finished, ...]
/// ```
///
/// A cycle or a missing dependency is reported by `job(maxConcurrent:policy:)` before anything runs.
public struct JobGraph<Key: Hashable & Sendable>: Sendable {
    /// What happens to the rest of the graph when a node fails.
    public enum FailurePolicy: Sendable {
        /// The failed node's dependents (and theirs) never start; independent nodes go on.
        case skipDependents
        /// Nothing new starts, and running nodes are cancelled.
        case stopAll
    }

    /// How one node ended.
    public enum Outcome: Sendable, CustomStringConvertible {
        /// The node's job finished.
        case finished
        /// The node's job failed with this error (its own, unwrapped).
        case failed(any Error)
        /// The node's job was cancelled (the graph's run was cancelled, or `stopAll` stopped it).
        case cancelled
        /// Never started: a node it depends on failed or was cancelled, or the graph stopped.
        case skipped

        public var description: String {
            switch self {
            case .finished: "finished"
            case .failed(let error): "failed: \(error)"
            case .cancelled: "cancelled"
            case .skipped: "skipped"
            }
        }

        /// Whether the node finished; `false` for failed, cancelled and skipped.
        public var isFinished: Bool {
            if case .finished = self { return true }
            return false
        }
    }

    /// Why a graph cannot run.
    public enum GraphError: Error, Equatable, CustomStringConvertible {
        /// Two nodes were added with this key.
        case duplicateNode(Key)
        /// `node` depends on `dependency`, which was never added.
        case missingDependency(node: Key, dependency: Key)
        /// The nodes of a cycle, in order, starting and ending with the same node.
        case cycle([Key])

        public var description: String {
            switch self {
            case .duplicateNode(let key): "node \(key) was added twice"
            case .missingDependency(let node, let dependency):
                "node \(node) depends on \(dependency), which is not in the graph"
            case .cycle(let keys): "the dependencies form a cycle: " + keys.map { "\($0)" }.joined(separator: " → ")
            }
        }
    }

    struct Node: Sendable {
        let job: Job<Void>
        let dependencies: [Key]
    }

    private(set) var order: [Key] = []
    private(set) var nodes: [Key: Node] = [:]

    /// An empty graph. Add nodes with `add`, then turn it into a job to run it.
    public init() {}

    /// Adds a node. Dependencies may be added later; they are checked when the graph runs.
    public mutating func add(_ key: Key, dependsOn dependencies: [Key] = [], _ job: Job<Void>) throws(GraphError) {
        guard nodes[key] == nil else { throw .duplicateNode(key) }
        nodes[key] = Node(job: job, dependencies: dependencies)
        order.append(key)
    }

    /// The graph as one job that finishes with every node's outcome (it fails only when cancelled).
    ///
    /// - Throws: `GraphError` for a missing dependency or a cycle; nothing has run then. A
    ///   `maxConcurrent` below 1 makes a job that fails with `JobError.invalidArgument`.
    public func job(maxConcurrent: Int? = nil, policy: FailurePolicy = .skipDependents) throws(GraphError)
        -> Job<[Key: Outcome]>
    {
        try validate()
        let limit = maxConcurrent ?? max(nodes.count, 1)
        guard limit >= 1 else {
            return .failure(JobError.invalidArgument("maxConcurrent must be at least 1, got \(limit)"))
        }
        let graph = Nested(self)
        return Job { controller in
            JobGraphExecution(graph: graph.value, limit: limit, policy: policy, controller: controller).start()
        }
    }

    private func validate() throws(GraphError) {
        for key in order {
            for dependency in nodes[key]!.dependencies where nodes[dependency] == nil {
                throw .missingDependency(node: key, dependency: dependency)
            }
        }
        // Depth-first search, iterative so that deep graphs cannot overflow the stack.
        var isVisiting: [Key: Bool] = [:]  // true while on the stack, false once done
        for root in order where isVisiting[root] == nil {
            var stack: [(key: Key, next: Int)] = [(root, 0)]
            isVisiting[root] = true
            while let top = stack.last {
                let dependencies = nodes[top.key]!.dependencies
                if top.next == dependencies.count {
                    isVisiting[top.key] = false
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                let dependency = dependencies[top.next]
                switch isVisiting[dependency] {
                case true:
                    let start = stack.firstIndex { $0.key == dependency }!
                    throw .cycle(stack[start...].map(\.key) + [dependency])
                case false:
                    continue
                case nil:
                    isVisiting[dependency] = true
                    stack.append((dependency, 0))
                }
            }
        }
    }
}
