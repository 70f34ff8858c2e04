import Foundation
import JobKit

/// The state of a `DownloadManager` as a value: its items, its slots, its journal records waiting to
/// be written and its deliveries waiting for the result queue. Every transition returns what to do
/// once the lock is released (`Actions`); it never calls out, never touches a file and never reads a
/// clock (`now` is passed in, in nanoseconds). `Handle` is what cancels a run (a `JobHandle`; tests
/// use anything).
struct DownloadManagerStateMachine<Handle> {
    typealias ItemID = DownloadManager.ItemID
    typealias Failure = DownloadManager.Failure

    enum Phase {
        /// Waiting; `ticket` orders it among the pending items (and tells a stale queue slot).
        case pending(ticket: UInt64)
        case running(Run)
        case suspended
        case completed(size: Int64)
        case failed(Failure)
        case cancelled
    }

    /// One run of an item: its token tells its callbacks from a stale run's.
    struct Run {
        var token: UInt64
        var handle: Handle?
        var verifying = false
    }

    struct Entry {
        let id: ItemID
        let url: URL
        let name: String
        /// `directory/name`, made once.
        let file: URL
        let host: String
        let checksum: Checksum?
        var phase: Phase
        /// Bytes in the file (the `.part` while running).
        var received: Int64 = 0
        var expected: Int64?
        /// Bytes moved by this process, only growing: the speed is measured on it.
        var transferred: Int64 = 0
        var meter: SpeedMeter
        /// A `finishing` record was written: the file under the name is the manager's to replace.
        var ownsFile = false
        /// The size the `finishing` record gave, for the completion.
        var finishingSize: Int64?
    }

    /// A run to start, outside the lock.
    struct Start: Equatable {
        let id: ItemID
        let token: UInt64
        let url: URL
        let name: String
        let checksum: Checksum?
        let ownsFile: Bool
    }

    typealias Wake = DeliveryWake

    /// What a transition asks the manager to do once the lock is released.
    struct Actions {
        var starts: [Start] = []
        var cancels: [Handle] = []
        /// Files to unlink: `.part`s and `.part.meta`s of the manager's items, or a completed file
        /// removed with `deletingFile`.
        var unlinks: [String] = []
        /// The names these unlinks clean: nothing of those names starts until `cleaned` is told,
        /// once the unlinks are done (an item of the name may be waiting for them).
        var cleaning: [String] = []
        var wake: Wake?
        /// Journal records are waiting to be written.
        var writesJournal = false
        /// Sync the journal to disk soon (a completion was recorded).
        var syncsJournal = false
        var waiters: [(CheckedContinuation<DownloadManager.Summary, Never>, DownloadManager.Summary)] = []

        /// Keeps the more urgent of the two wakes (a `later` one is stale once `now` was asked).
        mutating func wake(_ other: Wake?) {
            guard let other else { return }
            if wake != .now { wake = other }
        }

        mutating func merge(_ other: Actions) {
            starts += other.starts
            cancels += other.cancels
            unlinks += other.unlinks
            cleaning += other.cleaning
            wake(other.wake)
            writesJournal = writesJournal || other.writesJournal
            syncsJournal = syncsJournal || other.syncsJournal
            waiters += other.waiters
        }
    }

    /// A validated request, before it is committed.
    enum Prepared: Equatable {
        case new(id: ItemID, url: URL, name: String, checksum: Checksum?)
        /// The same URL, name and checksum as an item the manager has.
        case existing(ItemID)
    }

    let directory: URL
    private(set) var limit: Int
    let perHost: Int?
    let interval: UInt64
    let window: UInt64

    private var entries: [ItemID: Entry] = [:]
    private var order: [ItemID] = []
    private var names: [String: ItemID] = [:]
    private(set) var nextID: UInt64 = 1
    private var nextTicket: UInt64 = 0
    private var nextToken: UInt64 = 0
    /// Pending items per host, in ticket order; stale slots are dropped when they reach the front.
    private var queues: [String: Deque<(id: ItemID, ticket: UInt64)>] = [:]
    private var runningByHost: [String: Int] = [:]
    private(set) var runningCount = 0
    private(set) var pendingCount = 0
    /// What to do when a run that is no longer current reports its end, by its token.
    private var afterEnd: [UInt64: AfterEnd] = [:]
    /// Names whose files are being unlinked, with how many unlinks are under way: nothing of the
    /// name starts until they are done, so that none removes a new run's `.part` or file.
    private var cleaning: [String: Int] = [:]
    private var totalTransferred: Int64 = 0
    private var totalMeter: SpeedMeter
    /// An item became pending since the last drain: the next drain sends `allFinished`.
    private var hasActivity = false
    private(set) var isClosed = false
    private var holdsStarts = false
    private var outbox = Outbox()
    private var journal: [DownloadJournal.Record] = []
    /// Records written since the journal was last written whole, and how many that whole journal
    /// had: it is compacted again once the appended records outnumber it (and 1,024), so that it
    /// stays within about twice its compacted size at an amortized constant cost per record.
    private var recordsSinceCompaction = 0
    private var compactedRecords = 0
    private var waiters: [Int: CheckedContinuation<DownloadManager.Summary, Never>] = [:]
    private var openWaiters: Set<Int> = []
    private var nextWaiter = 0

    init(directory: URL, limit: Int, perHost: Int?, interval: Duration, window: Duration) {
        self.directory = directory
        self.limit = max(limit, 1)
        self.perHost = perHost.map { max($0, 1) }
        self.interval = interval.nanoseconds
        self.window = max(window.nanoseconds, 1_000_000)
        totalMeter = SpeedMeter(window: self.window)
    }

    // MARK: Restoring

    /// The items of a journal, as `DownloadManager.restoredStatus` judged them against the disk;
    /// `partLengths` gives the bytes already in an item's `.part`.
    mutating func restore(_ contents: DownloadJournal.Contents, partLengths: [UInt64: Int64], now: UInt64) -> Actions {
        nextID = max(nextID, contents.nextID)
        var actions = Actions()
        for restored in contents.entries {
            let id = ItemID(rawValue: restored.id)
            var entry = Entry(
                id: id, url: restored.url, name: restored.name, file: file(named: restored.name),
                host: Self.host(of: restored.url),
                checksum: restored.checksum, phase: .cancelled, meter: SpeedMeter(window: window),
                ownsFile: restored.ownsFile)
            entry.received = partLengths[restored.id] ?? 0
            switch restored.status {
            case .pending, .finishing: entry.phase = .pending(ticket: 0)
            case .suspended: entry.phase = .suspended
            case .cancelled: entry.phase = .cancelled
            case .failed(let failure): entry.phase = .failed(failure)
            case .completed(let size):
                entry.phase = .completed(size: size)
                entry.received = size
                entry.expected = size
            }
            let pending: Bool
            if case .pending = entry.phase { pending = true } else { pending = false }
            entries[id] = entry
            order.append(id)
            names[entry.name] = id
            if pending {
                enqueue(id)
            }
            actions.wake(outbox.note(.changed(item(id, now: now))))
        }
        claimStarts(now: now, into: &actions)
        return actions
    }

    // MARK: Adding

    /// Checks `requests` against each other and the items; nothing changes (ids are taken from
    /// `nextID` without moving it: `commit` does).
    func prepare(_ requests: [DownloadManager.Request]) throws(DownloadManagerError) -> [Prepared] {
        guard !isClosed else { throw .closed }
        var prepared: [Prepared] = []
        var batch: [String: (id: ItemID, request: DownloadManager.Request)] = [:]
        var id = nextID
        for request in requests {
            guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                let host = request.url.host, !host.isEmpty
            else { throw .unsupportedURL(request.url.absoluteString) }
            let name: String
            if let given = request.name { name = given } else { name = try Self.defaultName(for: request.url) }
            try Self.validate(name: name)
            if let existing = names[name], let entry = entries[existing] {
                guard entry.url == request.url, entry.checksum == request.checksum else {
                    throw .nameTaken(name, by: existing)
                }
                prepared.append(.existing(existing))
                continue
            }
            if let earlier = batch[name] {
                guard earlier.request.url == request.url, earlier.request.checksum == request.checksum else {
                    throw .nameTaken(name, by: earlier.id)
                }
                prepared.append(.existing(earlier.id))
                continue
            }
            batch[name] = (ItemID(rawValue: id), request)
            prepared.append(.new(id: ItemID(rawValue: id), url: request.url, name: name, checksum: request.checksum))
            id += 1
        }
        return prepared
    }

    /// The journal records of prepared requests (new items only).
    static func records(of prepared: [Prepared]) -> [DownloadJournal.Record] {
        prepared.compactMap { item in
            guard case .new(let id, let url, let name, let checksum) = item else { return nil }
            return .add(id.rawValue, url: url, name: name, checksum: checksum)
        }
    }

    /// Adds what `prepare` validated (and the journal recorded): new items are pending; an existing
    /// item that failed or was cancelled is queued again. Returns the ids, one per request.
    mutating func commit(_ prepared: [Prepared], now: UInt64) -> (ids: [ItemID], actions: Actions) {
        var actions = Actions()
        var ids: [ItemID] = []
        for item in prepared {
            switch item {
            case .new(let id, let url, let name, let checksum):
                nextID = max(nextID, id.rawValue + 1)
                if entries[id] != nil {
                    ids.append(id)  // the same request twice in one batch
                    continue
                }
                entries[id] = Entry(
                    id: id, url: url, name: name, file: file(named: name), host: Self.host(of: url), checksum: checksum,
                    phase: .cancelled, meter: SpeedMeter(window: window))
                order.append(id)
                names[name] = id
                recordsSinceCompaction += 1
                enqueue(id)
                actions.wake(outbox.note(.changed(self.item(id, now: now))))
                ids.append(id)
            case .existing(let id):
                ids.append(id)
                guard let entry = entries[id] else { continue }
                switch entry.phase {
                case .failed, .cancelled: actions.merge(requeue(id, now: now))
                default: break
                }
            }
        }
        claimStarts(now: now, into: &actions)
        return (ids, actions)
    }

    // MARK: Runs

    /// Keeps the handle of the run `token`; returns it when that run is no longer wanted (cancel it).
    mutating func attach(_ handle: Handle, to id: ItemID, token: UInt64) -> Handle? {
        guard case .running(var run) = entries[id]?.phase, run.token == token, run.handle == nil else { return handle }
        run.handle = handle
        entries[id]?.phase = .running(run)
        return nil
    }

    /// A response of run `token` starts writing at `offset`, of `total` bytes.
    mutating func began(_ id: ItemID, token: UInt64, offset: Int64, total: Int64?, now: UInt64) -> Wake? {
        guard isCurrent(id, token) else { return nil }
        entries[id]?.received = offset
        entries[id]?.expected = total
        return outbox.noteProgress(now: now, interval: interval)
    }

    /// Run `token` wrote `count` more bytes.
    mutating func received(_ id: ItemID, token: UInt64, count: Int, now: UInt64) -> Wake? {
        guard isCurrent(id, token) else { return nil }
        entries[id]!.received += Int64(count)
        entries[id]!.transferred += Int64(count)
        totalTransferred += Int64(count)
        return outbox.noteProgress(now: now, interval: interval)
    }

    /// Run `token` computes the checksum of its complete `.part`.
    mutating func verifying(_ id: ItemID, token: UInt64, now: UInt64) -> Wake? {
        guard case .running(var run) = entries[id]?.phase, run.token == token else { return nil }
        run.verifying = true
        entries[id]?.phase = .running(run)
        return outbox.note(.changed(item(id, now: now)))
    }

    /// Run `token`'s `.part` of `size` bytes is about to be renamed to the name: records that the
    /// file will be the manager's. False when the run is no longer wanted (do not rename).
    mutating func finishing(_ id: ItemID, token: UInt64, size: Int64) -> Bool {
        guard isCurrent(id, token), !isClosed else { return false }
        entries[id]?.ownsFile = true
        entries[id]?.finishingSize = size
        record(DownloadJournal.Record(op: .finishing, id: id.rawValue, size: size))
        return true
    }

    /// How a run ended.
    enum Outcome {
        case completed
        case failed(Failure)
        /// Cancelled without the manager asking (it asks only after leaving `running`).
        case cancelled
    }

    /// Run `token` ended.
    mutating func runEnded(_ id: ItemID, token: UInt64, _ outcome: Outcome, now: UInt64) -> Actions {
        guard isCurrent(id, token), let entry = entries[id] else { return staleRunEnded(token, outcome) }
        var actions = Actions()
        switch outcome {
        case .completed:
            let size = entry.finishingSize ?? entry.received
            entries[id]?.received = size
            entries[id]?.expected = size
            actions.merge(transition(id, to: .completed(size: size), now: now))
            record(DownloadJournal.Record(op: .done, id: id.rawValue, size: size))
            actions.writesJournal = true
            actions.syncsJournal = true
        case .failed(let failure):
            actions.merge(transition(id, to: .failed(failure), now: now))
            record(.state(id.rawValue, .failed(failure)))
            actions.writesJournal = true
            if failure.kind == .checksumMismatch { clean(entry.name, partFiles(of: entry), into: &actions) }
        case .cancelled:
            let failure = Failure(kind: .other, message: "the download of \(entry.url.absoluteString) was cancelled")
            actions.merge(transition(id, to: .failed(failure), now: now))
            record(.state(id.rawValue, .failed(failure)))
            actions.writesJournal = true
        }
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    // MARK: Controls

    /// Suspends a pending or running item (a running one's run is cancelled, its `.part` kept).
    mutating func suspend(_ id: ItemID, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = entries[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        switch entry.phase {
        case .pending, .running: break
        default: return Actions()
        }
        // Too late: its file is complete and taking its name; it ends completed.
        guard !isFinalizing(entry) else { return Actions() }
        var actions = transition(id, to: .suspended, now: now)
        record(.state(id.rawValue, .suspended))
        actions.writesJournal = true
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// Queues a suspended, failed or cancelled item again.
    mutating func resume(_ id: ItemID, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard entries[id] != nil else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        var actions = requeue(id, now: now)
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Cancels an item that is not completed: its run is cancelled and its `.part` removed.
    mutating func cancel(_ id: ItemID, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = entries[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        switch entry.phase {
        case .completed, .cancelled: return Actions()
        default: break
        }
        // Too late: its file is complete and taking its name; it ends completed.
        guard !isFinalizing(entry) else { return Actions() }
        entries[id]?.received = 0
        entries[id]?.expected = nil
        var actions = transition(id, to: .cancelled, now: now)
        clean(entry.name, partFiles(of: entry), into: &actions)
        unlinkPartWhenEnded(entry)
        record(.state(id.rawValue, .cancelled))
        actions.writesJournal = true
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// Forgets an item: its run is cancelled, its `.part` removed, and its file too when
    /// `deletingFile` and the manager downloaded it.
    mutating func remove(_ id: ItemID, deletingFile: Bool, now: UInt64) throws(DownloadManagerError) -> Actions {
        guard let entry = entries[id] else { throw .unknownItem(id) }
        guard !isClosed else { throw .closed }
        let removed = item(id, now: now)
        var actions = Actions()
        if case .running(let run) = entry.phase, isFinalizing(entry) {
            // Its file is complete and taking its name: the run is left to end, and then the file is
            // treated as a completed item's (removed when `deletingFile`). The name waits till then.
            afterEnd[run.token] = .removedWhileFinalizing(name: entry.name, deletingFile: deletingFile)
            cleaning[entry.name, default: 0] += 1
        } else {
            if case .running(let run) = entry.phase, let handle = run.handle { actions.cancels.append(handle) }
            unlinkPartWhenEnded(entry)
            if case .completed = entry.phase {
                if deletingFile, entry.ownsFile { clean(entry.name, [file(of: entry)], into: &actions) }
            } else {
                clean(entry.name, partFiles(of: entry), into: &actions)
            }
        }
        leave(entry)
        entries[id] = nil
        names[entry.name] = nil
        order.removeAll { $0 == id }
        record(DownloadJournal.Record(op: .remove, id: id.rawValue))
        actions.writesJournal = true
        actions.wake(outbox.note(.removed(removed)))
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    /// The unlinks of `names` (an `Actions.cleaning`) are done: what waited for them may start.
    mutating func cleaned(_ names: [String], now: UInt64) -> Actions {
        for name in names {
            guard let count = cleaning[name] else { continue }
            cleaning[name] = count > 1 ? count - 1 : nil
        }
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Whether the files of `name` are being unlinked.
    func isCleaning(_ name: String) -> Bool { cleaning[name] != nil }

    /// Every item's id, in the order added.
    var ids: [ItemID] { order }

    /// Starts nothing until `releaseStarts`: an operation on every item frees no slot that the
    /// next item takes only to be stopped in turn.
    mutating func holdStarts() { holdsStarts = true }

    /// Starts what the held operations made room for.
    mutating func releaseStarts(now: UInt64) -> Actions {
        holdsStarts = false
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Changes the width; raising it starts pending items now.
    mutating func setLimit(_ newLimit: Int, now: UInt64) -> Actions {
        limit = max(newLimit, 1)
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Closes the manager: running items go back to pending (in memory; the journal already says
    /// so) and their runs are cancelled; waiters get the summary; nothing starts any more.
    mutating func close(now: UInt64) -> Actions {
        guard !isClosed else { return Actions() }
        var actions = Actions()
        for id in order {
            guard let entry = entries[id], case .running(let run) = entry.phase else { continue }
            if let handle = run.handle { actions.cancels.append(handle) }
            leave(entry)
            entries[id]?.phase = .pending(ticket: 0)
            pendingCount += 1
        }
        isClosed = true
        let summary = summary(now: now)
        for (token, waiter) in waiters {
            actions.waiters.append((waiter, summary))
            openWaiters.remove(token)
        }
        waiters = [:]
        return actions
    }

    // MARK: Snapshots

    /// The item `id` now.
    func item(_ id: ItemID, now: UInt64) -> DownloadManager.Item {
        let entry = entries[id]!
        var progress = DownloadManager.ByteProgress(received: entry.received, expected: entry.expected)
        if case .running = entry.phase {
            progress.bytesPerSecond = entry.meter.rate(entry.transferred, at: now)
            if let expected = entry.expected, progress.bytesPerSecond > 0 {
                progress.secondsRemaining = Double(max(expected - entry.received, 0)) / progress.bytesPerSecond
            }
        }
        return DownloadManager.Item(
            id: id, url: entry.url, name: entry.name, file: entry.file, checksum: entry.checksum,
            state: state(of: entry), progress: progress)
    }

    /// The item `id` now, if there is one.
    func itemIfAny(_ id: ItemID, now: UInt64) -> DownloadManager.Item? {
        entries[id] == nil ? nil : item(id, now: now)
    }

    /// Every item and the totals now; notes the byte counts for the speeds.
    mutating func snapshot(now: UInt64) -> (items: [DownloadManager.Item], totals: DownloadManager.Totals) {
        totalMeter.record(totalTransferred, at: now)
        for id in order {
            guard case .running = entries[id]?.phase else { continue }
            entries[id]!.meter.record(entries[id]!.transferred, at: now)
        }
        let items = order.map { item($0, now: now) }
        return (items, totals(of: items, now: now))
    }

    func totals(of items: [DownloadManager.Item], now: UInt64) -> DownloadManager.Totals {
        var totals = DownloadManager.Totals()
        /// The bytes the active items still need.
        var left: Int64 = 0
        for item in items {
            switch item.state {
            case .pending: totals.pending += 1
            case .running, .verifying: totals.running += 1
            case .suspended: totals.suspended += 1
            case .completed: totals.completed += 1
            case .failed: totals.failed += 1
            case .cancelled: totals.cancelled += 1
            }
            switch item.state {
            case .failed, .cancelled: continue
            default: break
            }
            // `received` and `expected` add up the same items, so that one never outgrows the other.
            if let expected = item.progress.expected {
                totals.received += item.progress.received
                totals.expected += expected
                if item.state.isActive { left += max(expected - item.progress.received, 0) }
            } else {
                totals.receivedOfUnknownLength += item.progress.received
                if item.state.isActive { totals.itemsOfUnknownLength += 1 }
            }
        }
        totals.bytesPerSecond = totalMeter.rate(totalTransferred, at: now)
        if totals.itemsOfUnknownLength == 0, totals.bytesPerSecond > 0 {
            totals.secondsRemaining = Double(left) / totals.bytesPerSecond
        }
        return totals
    }

    func summary(now: UInt64) -> DownloadManager.Summary {
        let items = order.map { item($0, now: now) }
        return DownloadManager.Summary(items: items, totals: totals(of: items, now: now))
    }

    var activeCount: Int { pendingCount + runningCount }

    // MARK: Delivery

    /// A woken delivery starts: the events and the snapshot to hand to `onUpdate`, or nil when the
    /// wake is stale or a delivery is under way.
    mutating func beginDelivery(_ wake: Wake, now: UInt64) -> DownloadManager.Update? {
        guard outbox.begin(wake, now: now) else { return nil }
        let events = outbox.takeEvents()
        let (items, totals) = snapshot(now: now)
        return DownloadManager.Update(events: events, items: items, totals: totals)
    }

    /// The delivery ended: when to wake again, if anything waits.
    mutating func endDelivery(now: UInt64) -> Wake? {
        outbox.end(now: now, interval: interval)
    }

    /// How many events wait for delivery (for tests).
    var undeliveredEventCount: Int { outbox.eventCount }

    // MARK: Journal

    /// What the journal must get: new records to append, or (when it has grown past twice its
    /// compacted size) the whole journal to write anew.
    enum JournalWrite {
        case append([DownloadJournal.Record])
        case rewrite(DownloadJournal.Header, [DownloadJournal.Record])
    }

    /// Takes the records waiting to be written; nil when none wait.
    mutating func takeJournal() -> JournalWrite? {
        guard !journal.isEmpty else { return nil }
        defer { journal = [] }
        if recordsSinceCompaction > max(1024, compactedRecords) {
            return compacted()
        }
        return .append(journal)
    }

    /// The journal that says everything the manager knows, in few records.
    mutating func compacted() -> JournalWrite {
        journal = []
        let (header, records) = DownloadJournal.compacted(journalEntries, nextID: nextID)
        recordsSinceCompaction = 0
        compactedRecords = records.count
        return .rewrite(header, records)
    }

    /// The items as the journal describes them.
    var journalEntries: [DownloadJournal.Entry] {
        order.compactMap { id in
            guard let entry = entries[id] else { return nil }
            let status: DownloadJournal.Entry.Status
            switch entry.phase {
            case .pending, .running:
                // A run that recorded `finishing` may have renamed its `.part` already: a compacted
                // journal keeps that, so that the next manager finds the file done (not fetched again).
                status = entry.finishingSize.map { .finishing(size: $0) } ?? .pending
            case .suspended: status = .suspended
            case .cancelled: status = .cancelled
            case .failed(let failure): status = .failed(failure)
            case .completed(let size): status = .completed(size: size)
            }
            return DownloadJournal.Entry(
                id: id.rawValue, url: entry.url, name: entry.name, checksum: entry.checksum, status: status,
                ownsFile: entry.ownsFile)
        }
    }

    private mutating func record(_ record: DownloadJournal.Record) {
        journal.append(record)
        recordsSinceCompaction += 1
    }

    // MARK: Waiting

    mutating func makeWaiterToken() -> Int {
        nextWaiter += 1
        openWaiters.insert(nextWaiter)
        return nextWaiter
    }

    /// Keeps the waiter until the next drain; returns the summary to resume it with at once when
    /// nothing is active, the manager is closed, or the wait was cancelled.
    mutating func addWaiter(
        _ token: Int, _ continuation: CheckedContinuation<DownloadManager.Summary, Never>, now: UInt64
    ) -> DownloadManager.Summary? {
        guard activeCount > 0, !isClosed, openWaiters.contains(token) else {
            openWaiters.remove(token)
            return summary(now: now)
        }
        waiters[token] = continuation
        return nil
    }

    /// The waiting task was cancelled: its continuation and the summary now, if it was waiting.
    mutating func cancelWaiter(_ token: Int, now: UInt64) -> (
        CheckedContinuation<DownloadManager.Summary, Never>, DownloadManager.Summary
    )? {
        openWaiters.remove(token)
        guard let waiter = waiters.removeValue(forKey: token) else { return nil }
        return (waiter, summary(now: now))
    }

    // MARK: Internals

    /// What a run that is no longer current leaves to do when it reports its end.
    private enum AfterEnd {
        /// Its item was cancelled or removed: remove its `.part`, unless an item of the name runs
        /// again (its run owns the `.part` then).
        case removePart(name: String, paths: [String])
        /// Its item was removed as its file took the name (the name is marked cleaning until this
        /// is done): the file is a completed item's then, removed only when `deletingFile`; a run
        /// that did not get there leaves its `.part`, which nobody owns any more.
        case removedWhileFinalizing(name: String, deletingFile: Bool)
    }

    /// The `.part` of a cancelled or removed item is removed at once, and again when its run
    /// reports its end: a run that was starting as it was cancelled may have made it meanwhile.
    private mutating func unlinkPartWhenEnded(_ entry: Entry) {
        guard case .running(let run) = entry.phase else { return }
        afterEnd[run.token] = .removePart(name: entry.name, paths: partFiles(of: entry))
    }

    /// A run that is no longer current ended: removes what its item's cancellation or removal left.
    private mutating func staleRunEnded(_ token: UInt64, _ outcome: Outcome) -> Actions {
        var actions = Actions()
        switch afterEnd.removeValue(forKey: token) {
        case nil:
            break
        case .removePart(let name, let paths):
            if let id = names[name], case .running = entries[id]?.phase { break }
            clean(name, paths, into: &actions)
        case .removedWhileFinalizing(let name, let deletingFile):
            let path = file(named: name).path
            if case .completed = outcome {
                if deletingFile { actions.unlinks.append(path) }
            } else {
                actions.unlinks += [path + ".part", path + ".part.meta"]
            }
            // The mark was taken by `remove`: it is released once these unlinks are done.
            actions.cleaning.append(name)
        }
        return actions
    }

    /// Unlinks `paths` of `name` after the lock, marking the name until `cleaned` is told.
    private mutating func clean(_ name: String, _ paths: [String], into actions: inout Actions) {
        actions.unlinks += paths
        actions.cleaning.append(name)
        cleaning[name, default: 0] += 1
    }

    /// Whether the item's run recorded `finishing`: its `.part` is complete and is being (or was)
    /// renamed to the name, which no cancel or suspend undoes.
    private func isFinalizing(_ entry: Entry) -> Bool {
        guard case .running = entry.phase else { return false }
        return entry.finishingSize != nil
    }

    /// Whether run `token` is the one item `id` is running.
    func isCurrent(_ id: ItemID, _ token: UInt64) -> Bool {
        guard case .running(let run) = entries[id]?.phase else { return false }
        return run.token == token
    }

    private func state(of entry: Entry) -> DownloadManager.State {
        switch entry.phase {
        case .pending: .pending
        case .running(let run): run.verifying ? .verifying : .running
        case .suspended: .suspended
        case .completed: .completed
        case .failed(let failure): .failed(failure)
        case .cancelled: .cancelled
        }
    }

    /// Moves an item to `phase` (never `pending`: see `requeue`), freeing its slot and cancelling its
    /// run when it was running, and notes the change.
    private mutating func transition(_ id: ItemID, to phase: Phase, now: UInt64) -> Actions {
        guard let entry = entries[id] else { return Actions() }
        var actions = Actions()
        if case .running(let run) = entry.phase, let handle = run.handle {
            if case .completed = phase {} else if case .failed = phase {} else { actions.cancels.append(handle) }
        }
        leave(entry)
        entries[id]?.phase = phase
        entries[id]?.meter.reset()
        actions.wake(outbox.note(.changed(item(id, now: now))))
        return actions
    }

    /// Queues a suspended, failed or cancelled item again.
    private mutating func requeue(_ id: ItemID, now: UInt64) -> Actions {
        guard let entry = entries[id] else { return Actions() }
        switch entry.phase {
        case .suspended, .failed, .cancelled: break
        default: return Actions()
        }
        var actions = Actions()
        enqueue(id)
        record(.state(id.rawValue, .pending))
        actions.writesJournal = true
        actions.wake(outbox.note(.changed(item(id, now: now))))
        return actions
    }

    /// Makes an item pending at the back of its host's queue.
    private mutating func enqueue(_ id: ItemID) {
        guard let entry = entries[id] else { return }
        nextTicket += 1
        entries[id]?.phase = .pending(ticket: nextTicket)
        queues[entry.host, default: Deque()].append((id, nextTicket))
        pendingCount += 1
        hasActivity = true
    }

    /// Updates the counts for an item leaving its phase.
    private mutating func leave(_ entry: Entry) {
        switch entry.phase {
        case .pending:
            pendingCount -= 1
        case .running:
            runningCount -= 1
            runningByHost[entry.host, default: 1] -= 1
            if runningByHost[entry.host] == 0 { runningByHost[entry.host] = nil }
        default:
            break
        }
    }

    /// Starts pending items, oldest first, while the width and their hosts allow.
    private mutating func claimStarts(now: UInt64, into actions: inout Actions) {
        while !isClosed, !holdsStarts, runningCount < limit, let id = nextStartable() {
            guard let entry = entries[id] else { continue }
            nextToken += 1
            leave(entry)
            entries[id]!.phase = .running(Run(token: nextToken))
            entries[id]!.finishingSize = nil
            runningCount += 1
            runningByHost[entry.host, default: 0] += 1
            entries[id]!.meter.reset()
            entries[id]!.meter.record(entry.transferred, at: now)
            totalMeter.record(totalTransferred, at: now)
            actions.wake(outbox.note(.changed(item(id, now: now))))
            actions.starts.append(
                Start(
                    id: id, token: nextToken, url: entry.url, name: entry.name, checksum: entry.checksum,
                    ownsFile: entry.ownsFile))
        }
    }

    /// The pending item to start next: the oldest whose host has a free slot.
    private mutating func nextStartable() -> ItemID? {
        var best: (host: String, ticket: UInt64)?
        for host in Array(queues.keys) {
            if let perHost, runningByHost[host, default: 0] >= perHost { continue }
            // Drop stale slots: items that left `pending`, or were queued again under a new ticket.
            while let head = queues[host]?.first {
                if case .pending(let ticket) = entries[head.id]?.phase, ticket == head.ticket { break }
                _ = queues[host]!.popFirst()
            }
            guard let head = queues[host]?.first else {
                queues[host] = nil
                continue
            }
            // Its files are being unlinked: the host waits for that (a moment), keeping its order.
            if let name = entries[head.id]?.name, cleaning[name] != nil { continue }
            if best == nil || head.ticket < best!.ticket { best = (host, head.ticket) }
        }
        guard let best else { return nil }
        return queues[best.host]!.popFirst()!.id
    }

    /// Sends `allFinished` and resumes the waiters when nothing is active any more.
    private mutating func checkDrain(now: UInt64) -> Actions {
        var actions = Actions()
        guard activeCount == 0, hasActivity, !isClosed else { return actions }
        hasActivity = false
        let summary = summary(now: now)
        actions.wake(outbox.note(.allFinished(summary)))
        for (token, waiter) in waiters {
            actions.waiters.append((waiter, summary))
            openWaiters.remove(token)
        }
        waiters = [:]
        return actions
    }

    private func file(named name: String) -> URL {
        directory.appendingPathComponent(name, isDirectory: false)
    }

    private func file(of entry: Entry) -> String {
        entry.file.path
    }

    private func partFiles(of entry: Entry) -> [String] {
        let path = file(of: entry)
        return [path + ".part", path + ".part.meta"]
    }

    // MARK: Names

    /// The file name a URL gives: its last path component, percent-decoded.
    static func defaultName(for url: URL) throws(DownloadManagerError) -> String {
        let name = url.lastPathComponent
        guard !name.isEmpty, name != "/" else {
            throw .invalidName("", reason: "\(url.absoluteString) has no file name in its path: give one")
        }
        return name
    }

    /// Refuses names that are not one plain file name of the directory, or that the manager keeps.
    static func validate(name: String) throws(DownloadManagerError) {
        func refuse(_ reason: String) -> DownloadManagerError { .invalidName(name, reason: reason) }
        guard !name.isEmpty else { throw refuse("it is empty") }
        guard name != ".", name != ".." else { throw refuse("it names a directory") }
        guard !name.contains("/") else { throw refuse("it has a '/': a name is one file in the directory") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw refuse("it has a control character")
        }
        // 255 bytes is the usual limit of a file name, and `NAME.part.meta.tmp` adds 14.
        guard name.utf8.count <= 241 else { throw refuse("it is longer than 241 bytes") }
        guard !name.hasPrefix(".jobkit-downloads") else { throw refuse("the manager keeps that name for its journal") }
        for suffix in [".part", ".part.meta", ".part.meta.tmp"] where name.hasSuffix(suffix) {
            throw refuse("names ending in '\(suffix)' are kept for partial downloads")
        }
    }

    /// `host:port` of a URL, lower-cased: what the per-host limit counts.
    static func host(of url: URL) -> String {
        let host = url.host?.lowercased() ?? ""
        return url.port.map { "\(host):\($0)" } ?? host
    }
}

extension DownloadManagerStateMachine: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Entry: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Phase: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Run: Sendable where Handle: Sendable {}

/// When the result queue should be woken for a delivery.
enum DeliveryWake: Equatable {
    case now
    case later(generation: UInt64, afterNanoseconds: UInt64)
}

/// The deliveries waiting for the result queue: events in order, and whether progress changed.
///
/// At most one wake is outstanding: a state change wakes at once; progress alone wakes once the
/// interval since the last delivery has passed. While a delivery runs nothing is woken: its end
/// looks for what arrived meanwhile.
struct Outbox {
    private var events: [DownloadManager.Event] = []
    private var progressChanged = false
    private enum Scheduled: Equatable {
        case idle
        case now
        case later(UInt64)
    }
    private var scheduled = Scheduled.idle
    private var isDelivering = false
    private var generation: UInt64 = 0
    private var lastDelivery: UInt64?

    var eventCount: Int { events.count }

    /// Queues an event; returns a wake to schedule, if one is needed.
    mutating func note(_ event: DownloadManager.Event) -> DeliveryWake? {
        events.append(event)
        guard !isDelivering, scheduled != .now else { return nil }
        scheduled = .now
        return .now
    }

    /// Notes that bytes moved; returns a wake to schedule, if one is needed.
    mutating func noteProgress(now: UInt64, interval: UInt64) -> DeliveryWake? {
        progressChanged = true
        guard !isDelivering, scheduled == .idle else { return nil }
        return scheduleLater(now: now, interval: interval)
    }

    private mutating func scheduleLater(now: UInt64, interval: UInt64) -> DeliveryWake {
        generation += 1
        scheduled = .later(generation)
        let due = (lastDelivery ?? 0) &+ interval
        return .later(generation: generation, afterNanoseconds: due > now ? due - now : 0)
    }

    /// A wake ran: true when it is the current one and no delivery runs (then one starts).
    mutating func begin(_ wake: DeliveryWake, now: UInt64) -> Bool {
        guard !isDelivering else { return false }
        switch (wake, scheduled) {
        case (.now, .now): break
        case (.later(let generation, _), .later(let current)) where generation == current: break
        default: return false
        }
        scheduled = .idle
        isDelivering = true
        progressChanged = false
        lastDelivery = now
        return true
    }

    mutating func takeEvents() -> [DownloadManager.Event] {
        defer { events = [] }
        return events
    }

    /// A delivery ended: what arrived meanwhile wakes the queue again.
    mutating func end(now: UInt64, interval: UInt64) -> DeliveryWake? {
        isDelivering = false
        if !events.isEmpty {
            scheduled = .now
            return .now
        }
        if progressChanged { return scheduleLater(now: now, interval: interval) }
        return nil
    }
}

extension Duration {
    /// The duration in nanoseconds; negative ones are 0, huge ones saturate.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        return whole &+ UInt64(max(attoseconds, 0) / 1_000_000_000)
    }
}
