/// The state of a `JobQueue`, as a value: every transition returns what to do once the lock is
/// released. It never calls out. Adding, starting and finishing a job cost O(1) amortized at any
/// queue length.
struct JobQueueStateMachine<ID: Hashable & Sendable> {
    struct Item {
        let run: any AnyRun
        let start: @Sendable () -> Void
    }

    private struct Entry {
        let item: Item
        /// Tells this entry from an earlier or later one under the same id.
        let sequence: UInt64
        /// When it started, for `running`'s order; nil while pending.
        var startedAt: UInt64?
    }

    private(set) var limit: Int
    private(set) var isPaused = false
    private var entries: [ID: Entry] = [:]
    /// The pending ids in the order they were added, under their sequence.
    private var pendingOrder = SlotQueue<ID>()
    private(set) var runningCount = 0
    private var nextSequence: UInt64 = 0
    private var nextStart: UInt64 = 0
    /// The most recently ended ids, oldest first, at most `historyLimit`.
    private var history = Deque<ID>()
    let historyLimit: Int
    /// How many jobs ended since the queue was made.
    private(set) var finishedCount = 0
    private var waiters = Waiters<Void>()

    init(limit: Int, historyLimit: Int) {
        self.limit = max(limit, 1)
        self.historyLimit = max(historyLimit, 0)
    }

    var isIdle: Bool { entries.isEmpty }

    var pendingCount: Int { pendingOrder.count }

    /// A sequence number for the next `add`, taken before its run is made.
    mutating func takeSequence() -> UInt64 {
        nextSequence += 1
        return nextSequence
    }

    enum AddError: Error {
        case duplicate
    }

    /// Queues an item; returns the items to start now.
    mutating func add(_ item: Item, id: ID, sequence: UInt64) throws(AddError) -> [Item] {
        guard entries[id] == nil else { throw .duplicate }
        entries[id] = Entry(item: item, sequence: sequence)
        pendingOrder.append(id, ticket: sequence)
        return claimStarts()
    }

    struct Completion {
        var start: [Item] = []
        /// The queue just became idle: send `onAllFinished`, resume these waiters.
        var drained = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The run added as `sequence` under `id` completed.
    mutating func completed(_ id: ID, sequence: UInt64) -> Completion {
        guard let entry = entries[id], entry.sequence == sequence else { return Completion() }
        entries[id] = nil
        if entry.startedAt == nil {
            pendingOrder.remove(id)
        } else {
            runningCount -= 1
        }
        finishedCount += 1
        if historyLimit > 0 {
            history.append(id)
            if history.count > historyLimit { _ = history.popFirst() }
        }
        var completion = Completion(start: claimStarts())
        if entries.isEmpty {
            completion.drained = true
            completion.waiters = waiters.takeAll()
        }
        return completion
    }

    /// Changes the width (below 1 counts as 1); returns the items to start now (none when it shrank).
    mutating func setLimit(_ newLimit: Int) -> [Item] {
        limit = max(newLimit, 1)
        return claimStarts()
    }

    /// Pausing starts nothing new; resuming returns the items to start now.
    mutating func setPaused(_ paused: Bool) -> [Item] {
        isPaused = paused
        return claimStarts()
    }

    func run(for id: ID) -> (any AnyRun)? {
        entries[id]?.item.run
    }

    /// Ids waiting for a slot, in the order they will start.
    var pending: [ID] { pendingOrder.keys }

    /// Ids running now, in the order they started.
    var running: [ID] {
        entries.compactMap { id, entry in entry.startedAt.map { (id, $0) } }.sorted { $0.1 < $1.1 }.map(\.0)
    }

    /// The most recently ended ids, most recent first.
    var finished: [ID] { history.elements.reversed() }

    /// Every queued and running run, pending ones first so that none starts while others are cancelled.
    var allRuns: [any AnyRun] {
        pending.compactMap { entries[$0]?.item.run } + running.compactMap { entries[$0]?.item.run }
    }

    // MARK: Waiting until idle

    mutating func makeWaiterToken() -> Int { waiters.makeToken() }

    /// Returns `true` when the waiter must be resumed at once (idle, or its task was cancelled).
    mutating func addWaiter(_ token: Int, _ continuation: CheckedContinuation<Void, Never>) -> Bool {
        !waiters.wait(token, continuation, isReached: entries.isEmpty)
    }

    /// The waiting task was cancelled: returns its continuation to resume, if it was waiting. A
    /// token already resumed is forgotten; one not yet waiting is closed, so that it resumes at once.
    mutating func cancelWaiter(_ token: Int) -> CheckedContinuation<Void, Never>? {
        waiters.cancel(token)
    }

    /// How many slots the pending queue holds, live and stale (for tests).
    var pendingSlotCount: Int { pendingOrder.slotCount }

    // MARK: Starting

    private mutating func claimStarts() -> [Item] {
        var starts: [Item] = []
        while !isPaused, runningCount < limit, let id = pendingOrder.popFirst() {
            nextStart += 1
            entries[id]?.startedAt = nextStart
            runningCount += 1
            starts.append(entries[id]!.item)
        }
        return starts
    }
}
