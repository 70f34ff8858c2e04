/// The state of a `JobQueue`, as a value: every transition returns what to do once the lock is
/// released. It never calls out.
struct JobQueueStateMachine<ID: Hashable & Sendable> {
    struct Item {
        let run: any AnyRun
        let start: @Sendable () -> Void
    }

    private(set) var limit: Int
    private var items: [ID: Item] = [:]
    private(set) var pending: [ID] = []
    private(set) var running: [ID] = []
    /// Most recently finished first.
    private(set) var finished: [ID] = []

    init(limit: Int) {
        self.limit = limit
    }

    enum AddError: Error {
        case duplicate
    }

    /// Queues an item; returns the items to start now.
    mutating func add(_ item: Item, id: ID) throws(AddError) -> [Item] {
        guard items[id] == nil else { throw .duplicate }
        items[id] = item
        finished.removeAll { $0 == id }
        pending.append(id)
        return claimStarts()
    }

    /// An item's run completed. Returns the items to start now, and whether the queue just drained.
    mutating func completed(_ id: ID) -> (start: [Item], drained: Bool) {
        guard items.removeValue(forKey: id) != nil else { return ([], false) }
        if let index = running.firstIndex(of: id) {
            running.remove(at: index)
        } else {
            pending.removeAll { $0 == id }
        }
        finished.insert(id, at: 0)
        let starts = claimStarts()
        return (starts, items.isEmpty)
    }

    /// Changes the width; returns the items to start now (none when it shrank).
    mutating func setLimit(_ newLimit: Int) -> [Item] {
        limit = newLimit
        return claimStarts()
    }

    func run(for id: ID) -> (any AnyRun)? {
        items[id]?.run
    }

    /// Every queued and running run, pending ones first so that none starts while others are cancelled.
    var allRuns: [any AnyRun] {
        (pending + running).compactMap { items[$0]?.run }
    }

    private mutating func claimStarts() -> [Item] {
        var starts: [Item] = []
        while running.count < limit, !pending.isEmpty {
            let id = pending.removeFirst()
            running.append(id)
            starts.append(items[id]!)
        }
        return starts
    }
}
