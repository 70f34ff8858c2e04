/// The state of a running group, collect, settle or sequence, as a value. Every transition returns
/// what to do after the lock is released; it never calls out.
struct JobGroupStateMachine<Element: Sendable> {
    enum Policy {
        /// The first failure fails the whole group: running members are cancelled, pending ones never start.
        case failFast
        /// Every member runs to its end; failures are results like any other.
        case settle
    }

    let policy: Policy
    let count: Int
    let limit: Int
    /// Whether member results are kept (collect and settle) or only counted (group and sequence).
    let keepsResults: Bool

    private var isDone = false
    private var nextIndex = 0
    private var inFlight = 0
    private var completedCount = 0
    /// The registered members that have not completed, by index.
    private var members: GroupMembers
    private var results: [Result<Element, any Error>?]
    /// Which members have completed, a bit each: an empty slot in `members` is a member that
    /// completed or one claimed but not registered yet, and progress asked for meanwhile must tell
    /// them apart (see `install`).
    private var completed: [UInt64]
    /// One child progress per member, once somebody asked for the group's progress.
    private var childReporters: [ProgressReporter]?

    init(policy: Policy, count: Int, limit: Int, keepsResults: Bool) {
        self.policy = policy
        self.count = count
        self.limit = limit
        self.keepsResults = keepsResults
        self.members = GroupMembers(count: count)
        self.results = keepsResults ? Array(repeating: nil, count: count) : []
        self.completed = Array(repeating: 0, count: (count + 63) / 64)
    }

    enum StartAction {
        case launch(Range<Int>)
        case finish([Result<Element, any Error>])
    }

    /// The group's run has started: launch the first members, or finish at once when there are none.
    mutating func start() -> StartAction {
        if count == 0 {
            isDone = true
            return .finish([])
        }
        return .launch(claimLaunches())
    }

    /// Members `range` have been created: keep them for cancellation. Returns `nil` when the group
    /// ended meanwhile (the members must then not be started), else the child progress each must adopt.
    mutating func register(_ runs: [Run<Element>], from start: Int) -> [ProgressReporter]? {
        guard !isDone else { return nil }
        for offset in 0..<runs.count { keep(runs[offset], at: start + offset) }
        guard let childReporters else { return [] }
        return Array(childReporters[start..<start + runs.count])
    }

    enum RegisterAction {
        /// The group ended meanwhile: the member must not start.
        case drop
        case start
        /// Start the member once it has adopted this child progress.
        case adoptAndStart(ProgressReporter)
    }

    /// One member has been created: keep it for cancellation, and say whether it starts.
    mutating func register(_ run: Run<Element>, at index: Int) -> RegisterAction {
        guard !isDone else { return .drop }
        keep(run, at: index)
        guard let childReporters else { return .start }
        return .adoptAndStart(childReporters[index])
    }

    /// Somebody asked for the group's progress: keep one child per member. Returns the children of
    /// the members already registered, each with its run so that it can catch up, or with nil when the
    /// member completed (its child is complete). A member claimed but not registered yet is not
    /// among them: it has not started, and adopts its child when it registers.
    mutating func install(_ children: [ProgressReporter]) -> [(child: ProgressReporter, run: Run<Element>?)] {
        guard childReporters == nil, !isDone else { return [] }
        childReporters = children
        return (0..<nextIndex).compactMap { index in
            if let run = run(at: index) { return (children[index], run) }
            return hasCompleted(index) ? (children[index], nil) : nil
        }
    }

    /// The running member at `index`, if any.
    func member(at index: Int) -> Run<Element>? {
        run(at: index)
    }

    enum MemberAction {
        case none
        case launch(Range<Int>)
        case finish([Result<Element, any Error>])
        case fail(any Error, cancelling: [Run<Element>])
    }

    mutating func memberCompleted(at index: Int, with result: Result<Element, any Error>) -> MemberAction {
        guard !isDone else { return .none }
        members.remove(at: index)
        completed[index >> 6] |= 1 << UInt64(index & 63)
        inFlight -= 1
        completedCount += 1
        if case .failure(let error) = result, policy == .failFast {
            isDone = true
            return .fail(error, cancelling: takeMembers())
        }
        if keepsResults { results[index] = result }
        if completedCount == count {
            isDone = true
            let results = self.results
            self.results = []
            return .finish(results.map { $0! })
        }
        let range = claimLaunches()
        return range.isEmpty ? .none : .launch(range)
    }

    /// The group's own run was cancelled: returns the members to cancel.
    mutating func cancel() -> [Run<Element>] {
        guard !isDone else { return [] }
        isDone = true
        return takeMembers()
    }

    /// The child progress of every member, once the group is done (empty if nobody asked for it).
    mutating func takeChildReporters() -> [ProgressReporter] {
        defer { childReporters = nil }
        return childReporters ?? []
    }

    @inline(__always)
    private mutating func claimLaunches() -> Range<Int> {
        // `limit` may be `Int.max`: never add to it.
        let end = nextIndex + min(count - nextIndex, limit - inFlight)
        guard end > nextIndex else { return nextIndex..<nextIndex }
        let range = nextIndex..<end
        inFlight += range.count
        nextIndex = end
        return range
    }

    private mutating func takeMembers() -> [Run<Element>] {
        members.takeAll().map { Run<Element>(storage: $0) }
    }

    /// Keeps a registered member (its storage retained until `memberCompleted` or `takeMembers`).
    private mutating func keep(_ run: Run<Element>, at index: Int) {
        members.keep(run.storage, at: index)
    }

    private func hasCompleted(_ index: Int) -> Bool {
        completed[index >> 6] & (1 << UInt64(index & 63)) != 0
    }

    /// The registered member at `index`, if it has not completed.
    private func run(at index: Int) -> Run<Element>? {
        members.storage(at: index).map { Run<Element>(storage: $0) }
    }
}
