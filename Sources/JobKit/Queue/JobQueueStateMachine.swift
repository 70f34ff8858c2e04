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
    /// Ids in the order they were added; an entry that ended or is no longer pending under that
    /// sequence is skipped when it reaches the front.
    private var pendingOrder = Deque<(id: ID, sequence: UInt64)>()
    /// Slots in `pendingOrder` of jobs that ended while pending: compacted away once they outnumber
    /// the live ones, so the deque stays within twice the pending count (plus 64).
    private var staleSlots = 0
    private(set) var pendingCount = 0
    private(set) var runningCount = 0
    private var nextSequence: UInt64 = 0
    private var nextStart: UInt64 = 0
    /// The most recently ended ids, oldest first, at most `historyLimit`.
    private var history = Deque<ID>()
    let historyLimit: Int
    /// How many jobs ended since the queue was made.
    private(set) var finishedCount = 0
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    /// Tokens handed out and not yet resolved (resumed, or cancelled before they waited).
    private var openWaiters: Set<Int> = []
    private var nextWaiter = 0

    init(limit: Int, historyLimit: Int) {
        self.limit = max(limit, 1)
        self.historyLimit = max(historyLimit, 0)
    }

    var isIdle: Bool { entries.isEmpty }

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
        pendingOrder.append((id, sequence))
        pendingCount += 1
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
            pendingCount -= 1
            staleSlots += 1
            compactPendingOrderIfStale()
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
            pendingOrder = Deque()  // only stale slots of cancelled jobs can be left
            staleSlots = 0
            completion.drained = true
            completion.waiters = Array(waiters.values)
            for token in waiters.keys { openWaiters.remove(token) }
            waiters = [:]
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
    var pending: [ID] {
        pendingOrder.elements.compactMap { isPending($0) ? $0.id : nil }
    }

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

    mutating func makeWaiterToken() -> Int {
        nextWaiter += 1
        openWaiters.insert(nextWaiter)
        return nextWaiter
    }

    /// Returns `true` when the waiter must be resumed at once (idle, or its task was cancelled).
    mutating func addWaiter(_ token: Int, _ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard !entries.isEmpty, openWaiters.contains(token) else {
            openWaiters.remove(token)
            return true
        }
        waiters[token] = continuation
        return false
    }

    /// The waiting task was cancelled: returns its continuation to resume, if it was waiting. A
    /// token already resumed is forgotten; one not yet waiting is closed, so that it resumes at once.
    mutating func cancelWaiter(_ token: Int) -> CheckedContinuation<Void, Never>? {
        openWaiters.remove(token)
        return waiters.removeValue(forKey: token)
    }

    /// How many slots the pending deque holds, live and stale (for tests).
    var pendingSlotCount: Int { pendingOrder.count }

    // MARK: Starting

    private func isPending(_ slot: (id: ID, sequence: UInt64)) -> Bool {
        guard let entry = entries[slot.id] else { return false }
        return entry.sequence == slot.sequence && entry.startedAt == nil
    }

    private mutating func compactPendingOrderIfStale() {
        guard staleSlots > 64, staleSlots > pendingCount else { return }
        var live = Deque<(id: ID, sequence: UInt64)>()
        for slot in pendingOrder.elements where isPending(slot) { live.append(slot) }
        pendingOrder = live
        staleSlots = 0
    }

    private mutating func claimStarts() -> [Item] {
        var starts: [Item] = []
        while !isPaused, runningCount < limit, let slot = pendingOrder.popFirst() {
            guard isPending(slot) else {
                staleSlots -= 1
                continue
            }
            nextStart += 1
            entries[slot.id]?.startedAt = nextStart
            pendingCount -= 1
            runningCount += 1
            starts.append(entries[slot.id]!.item)
        }
        return starts
    }
}
