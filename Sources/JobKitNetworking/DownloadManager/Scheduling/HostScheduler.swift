import JobKit

/// Which pending download starts next: one queue per host, a total limit and an optional per-host
/// limit, and the counts of pending and running items.
///
/// It keeps these rules: an item is pending (queued under its host) or running here, never both,
/// and the counts say how many are; `claimNext` never starts more than `limit` runs in all nor more
/// than `perHost` on one host, and it starts the oldest queued item (by ticket, across hosts) whose
/// host has room and that nothing blocks. A blocked head keeps its host's order: nothing of that
/// host overtakes it. Queues are `SlotQueue`s, so an item withdrawn and queued again any number of
/// times costs amortized O(1) and no memory that stays; a host with nothing queued holds no queue.
///
/// A value behind the manager's lock, like the state machine that owns it.
struct HostScheduler {
    typealias ItemID = DownloadManager.ItemID

    private var queues: [String: SlotQueue<ItemID>] = [:]
    private var runningByHost: [String: Int] = [:]
    private var lastTicket: UInt64 = 0
    /// Items that are pending: queued ones, and those `close` stopped (counted, not queued).
    private(set) var pendingCount = 0
    private(set) var runningCount = 0
    /// The most runs at once (at least 1).
    private(set) var limit: Int
    /// The most runs at once for one host (at least 1), or nil for no limit.
    let perHost: Int?

    /// Nothing queued or running; limits below 1 count as 1.
    init(limit: Int, perHost: Int?) {
        self.limit = max(limit, 1)
        self.perHost = perHost.map { max($0, 1) }
    }

    /// Items pending or running.
    var activeCount: Int { pendingCount + runningCount }

    /// Slots held by the queues, stale ones included (for tests of their bound).
    var queuedSlots: Int { queues.values.reduce(0) { $0 + $1.slotCount } }

    /// How many queues are held (one per host with a queued item, for tests of their bound).
    var queueCount: Int { queues.count }

    /// The items queued for `host`, first to last.
    func queued(for host: String) -> [ItemID] { queues[host]?.keys ?? [] }

    /// How many runs `host` has.
    func running(on host: String) -> Int { runningByHost[host, default: 0] }

    /// Changes the total limit (at least 1); the caller claims what a raise makes room for.
    mutating func setLimit(_ newLimit: Int) {
        limit = max(newLimit, 1)
    }

    /// Queues `id` at the back of `host`'s queue, after every item queued before it; returns its ticket.
    @discardableResult
    mutating func enqueue(_ id: ItemID, host: String) -> UInt64 {
        lastTicket += 1
        queues[host, default: SlotQueue()].append(id, ticket: lastTicket)
        pendingCount += 1
        return lastTicket
    }

    /// A pending item leaves the queue without starting (suspended, cancelled, removed).
    mutating func withdraw(_ id: ItemID, host: String) {
        precondition(pendingCount > 0, "no item is pending")
        pendingCount -= 1
        queues[host]?.remove(id)
        if queues[host]?.isEmpty == true { queues[host] = nil }
    }

    /// A run of `host` ended or was stopped: its `slots` (its connections, as `claimNext` counted
    /// them) are free.
    mutating func runEnded(host: String, slots: Int = 1) {
        precondition(
            slots >= 1 && runningCount >= slots && runningByHost[host, default: 0] >= slots,
            "no run of \(host) with \(slots) slots is counted")
        runningCount -= slots
        runningByHost[host]! -= slots
        if runningByHost[host] == 0 { runningByHost[host] = nil }
    }

    /// A run of `host` gives back `slots` of the slots it holds (it opens fewer connections than it
    /// took) and keeps the rest: they are free for the next `claimNext`. Its end frees the rest.
    mutating func runGaveBack(host: String, slots: Int) {
        runEnded(host: host, slots: slots)
    }

    /// A run of `host` stopped by closing counts as pending again, unqueued: nothing starts any more.
    mutating func runStoppedByClose(host: String, slots: Int = 1) {
        runEnded(host: host, slots: slots)
        pendingCount += 1
    }

    /// Takes the oldest queued item whose host has a free slot and that `isBlocked` does not hold
    /// back, and counts it running on its host; nil when the limit is reached or none can start.
    /// `isBlocked` is asked about the head of each host's queue only.
    ///
    /// An item that `connections` says wants several connections takes as many slots as are free,
    /// up to that many, at least one (in the total and on its host): `slots` says how many, the
    /// connections its run may open; `runGaveBack` frees those it does not use, `runEnded` the rest.
    mutating func claimNext(
        isBlocked: (ItemID) -> Bool, connections: (ItemID) -> Int = { _ in 1 }
    ) -> (id: ItemID, host: String, slots: Int)? {
        guard runningCount < limit else { return nil }
        var best: (host: String, ticket: UInt64)?
        for host in Array(queues.keys) {
            if let perHost, runningByHost[host, default: 0] >= perHost { continue }
            guard let head = queues[host]?.first() else {
                queues[host] = nil
                continue
            }
            // Held back (its files are being unlinked): the host waits, keeping its order.
            if isBlocked(head.key) { continue }
            if best == nil || head.ticket < best!.ticket { best = (host, head.ticket) }
        }
        guard let best, let id = queues[best.host]?.popFirst() else { return nil }
        if queues[best.host]?.isEmpty == true { queues[best.host] = nil }
        pendingCount -= 1
        var slots = max(1, min(connections(id), limit - runningCount))
        if let perHost { slots = max(1, min(slots, perHost - runningByHost[best.host, default: 0])) }
        runningCount += slots
        runningByHost[best.host, default: 0] += slots
        return (id, best.host, slots)
    }
}
