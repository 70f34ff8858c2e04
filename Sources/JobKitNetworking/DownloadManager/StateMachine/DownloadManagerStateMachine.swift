import Foundation
import JobKit

/// The state of a `DownloadManager` as a value: its items, its slots, its journal records waiting to
/// be written and its deliveries waiting for the result queue. Every transition returns what to do
/// once the lock is released (`Actions`); it never calls out, never touches a file and never reads a
/// clock (`now` is passed in, in nanoseconds). `Handle` is what cancels a run (a `JobHandle`; tests
/// use anything).
///
/// Its extensions are in `DownloadManagerStateMachine+*.swift` (restoring, controls, snapshots, the
/// journal, waiters, names); their state is internal for them, and nothing else changes it.
struct DownloadManagerStateMachine<Handle> {
    typealias ItemID = DownloadManager.ItemID
    typealias ItemError = DownloadManager.ItemError

    enum Phase {
        /// Waiting; `ticket` orders it among the pending items (and tells a stale queue slot).
        case pending(ticket: UInt64)
        case running(Run)
        case suspended
        /// Restored from the journal as pending, and not started (`startsRestoredItems` false):
        /// shown as suspended, kept pending in the journal, queued when added again or resumed.
        case held
        case completed(size: Int64)
        case failed(ItemError)
        case cancelled

        var isCancelled: Bool {
            if case .cancelled = self { return true }
            return false
        }
    }

    /// One run of an item: its generation tells its callbacks from a stale run's.
    struct Run {
        var generation: UInt64
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
        /// The finished file may replace one under its name (`Request.replacesExistingFile`; not
        /// journaled: a restored item never replaces).
        var replacesFile = false
    }

    /// A run to start, outside the lock.
    struct Start: Equatable {
        let id: ItemID
        let generation: UInt64
        let url: URL
        let name: String
        let checksum: Checksum?
        /// The finished file may replace one under its name.
        let replacesFile: Bool
    }

    typealias Wake = DeliveryWake

    /// What a transition asks the manager to do once the lock is released.
    struct Actions {
        var starts: [Start] = []
        var cancels: [Handle] = []
        /// Names in the directory to unlink: `.part`s and `.part.meta`s of the manager's items, or a
        /// completed file removed with `deletingFile`.
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
        case new(id: ItemID, url: URL, name: String, checksum: Checksum?, replacing: Bool)
        /// The same URL, name and checksum as an item the manager has.
        case existing(ItemID, replacing: Bool)
    }

    let directory: URL
    var limit: Int
    let perHost: Int?
    let interval: UInt64
    let window: UInt64
    /// Items restored as pending start (else they are `held`).
    let startsRestored: Bool

    var entries: [ItemID: Entry] = [:]
    var order: [ItemID] = []
    var names: [String: ItemID] = [:]
    var nextID: UInt64 = 1
    var nextTicket: UInt64 = 0
    var nextGeneration: UInt64 = 0
    /// Pending items per host, in ticket order (an item leaving `pending` is withdrawn from its queue).
    var queues: [String: SlotQueue<ItemID>] = [:]
    var runningByHost: [String: Int] = [:]
    var runningCount = 0
    var pendingCount = 0
    /// What to do when a run that is no longer current reports its end, by its generation.
    var afterEnd: [UInt64: AfterEnd] = [:]
    /// Runs that were stopped (suspended, cancelled, removed) and have not reported their end, by
    /// generation, with their item's name: the name counts as cleaning until then, so that nothing of
    /// the name starts while the stopped run may still hold its `.part`.
    var stopping: [UInt64: String] = [:]
    /// Names whose files are being unlinked, with how many unlinks are under way: nothing of the
    /// name starts until they are done, so that none removes a new run's `.part` or file.
    var cleaning: [String: Int] = [:]
    var totalTransferred: Int64 = 0
    var totalMeter: SpeedMeter
    /// An item became pending since the last drain: the next drain sends `allFinished`.
    var hasActivity = false
    var isClosed = false
    var holdsStarts = false
    var outbox = Outbox()
    var journal: [DownloadJournal.Record] = []
    /// Records written since the journal was last written whole, and how many that whole journal
    /// had: it is compacted again once the appended records outnumber it (and 1,024), so that it
    /// stays within about twice its compacted size at an amortized constant cost per record.
    var recordsSinceCompaction = 0
    var compactedRecords = 0
    /// A rewrite of the journal failed: the next write is a whole one.
    var compactionOwed = false
    var waiters = Waiters<DownloadManager.Summary>()

    init(
        directory: URL, limit: Int, perHost: Int?, interval: Duration, window: Duration, startsRestored: Bool = true
    ) {
        self.directory = directory
        self.startsRestored = startsRestored
        self.limit = max(limit, 1)
        self.perHost = perHost.map { max($0, 1) }
        self.interval = interval.nanoseconds
        self.window = max(window.nanoseconds, 1_000_000)
        totalMeter = SpeedMeter(window: self.window)
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
            else { throw .unsupportedURL(request.url.redactedString) }
            let name: String
            if let given = request.name { name = given } else { name = try Self.defaultName(for: request.url) }
            try DownloadManager.checkName(name)
            let replacing = request.replacesExistingFile
            if let existing = names[name], let entry = entries[existing] {
                guard entry.url == request.url, entry.checksum == request.checksum else {
                    throw .nameTaken(name, by: existing)
                }
                prepared.append(.existing(existing, replacing: replacing))
                continue
            }
            if let earlier = batch[name] {
                guard earlier.request.url == request.url, earlier.request.checksum == request.checksum else {
                    throw .nameTaken(name, by: earlier.id)
                }
                prepared.append(.existing(earlier.id, replacing: replacing))
                continue
            }
            // Ids count up to the journal's limit (2⁶²): reached only from a planted journal.
            guard id < DownloadJournal.maximumID else {
                throw .cannotUseDirectory(directory.path, reason: "its journal has used every item id")
            }
            batch[name] = (ItemID(rawValue: id), request)
            prepared.append(
                .new(
                    id: ItemID(rawValue: id), url: request.url, name: name, checksum: request.checksum,
                    replacing: replacing))
            id += 1
        }
        return prepared
    }

    /// The journal records of prepared requests (new items only).
    static func records(of prepared: [Prepared]) -> [DownloadJournal.Record] {
        prepared.compactMap { item in
            guard case .new(let id, let url, let name, let checksum, _) = item else { return nil }
            return .add(id.rawValue, url: url, name: name, checksum: checksum)
        }
    }

    /// Adds what `prepare` validated (and the journal recorded): new items are pending; an existing
    /// item that failed, was cancelled or is held is queued again. Returns the ids, one per request.
    mutating func commit(_ prepared: [Prepared], now: UInt64) -> (ids: [ItemID], actions: Actions) {
        var actions = Actions()
        var ids: [ItemID] = []
        for item in prepared {
            switch item {
            case .new(let id, let url, let name, let checksum, let replacing):
                nextID = max(nextID, id.rawValue + 1)
                if entries[id] != nil {
                    if replacing { entries[id]?.replacesFile = true }
                    ids.append(id)  // the same request twice in one batch
                    continue
                }
                entries[id] = Entry(
                    id: id, url: url, name: name, file: file(named: name), host: Self.host(of: url), checksum: checksum,
                    phase: .cancelled, meter: SpeedMeter(window: window), replacesFile: replacing)
                order.append(id)
                names[name] = id
                recordsSinceCompaction += 1
                enqueue(id)
                actions.wake(outbox.note(.changed(self.item(id, now: now))))
                ids.append(id)
            case .existing(let id, let replacing):
                ids.append(id)
                guard let entry = entries[id] else { continue }
                if replacing { entries[id]?.replacesFile = true }
                switch entry.phase {
                case .failed, .cancelled, .held: actions.merge(requeue(id, now: now))
                default: break
                }
            }
        }
        claimStarts(now: now, into: &actions)
        return (ids, actions)
    }

    // MARK: Runs

    /// Keeps the handle of the run `generation`; returns it when that run is no longer wanted (cancel it).
    mutating func attach(_ handle: Handle, to id: ItemID, generation: UInt64) -> Handle? {
        guard case .running(var run) = entries[id]?.phase, run.generation == generation, run.handle == nil else {
            return handle
        }
        run.handle = handle
        entries[id]?.phase = .running(run)
        return nil
    }

    /// A response of run `generation` starts writing at `offset`, of `total` bytes.
    mutating func began(_ id: ItemID, generation: UInt64, offset: Int64, total: Int64?, now: UInt64) -> Wake? {
        guard isCurrent(id, generation) else { return nil }
        entries[id]?.received = offset
        entries[id]?.expected = total
        return outbox.noteProgress(now: now, interval: interval)
    }

    /// Run `generation` wrote `count` more bytes.
    mutating func received(_ id: ItemID, generation: UInt64, count: Int, now: UInt64) -> Wake? {
        guard isCurrent(id, generation) else { return nil }
        entries[id]!.received = entries[id]!.received.addingSaturating(Int64(count))
        entries[id]!.transferred = entries[id]!.transferred.addingSaturating(Int64(count))
        totalTransferred = totalTransferred.addingSaturating(Int64(count))
        return outbox.noteProgress(now: now, interval: interval)
    }

    /// Run `generation` computes the checksum of its complete `.part`.
    mutating func verifying(_ id: ItemID, generation: UInt64, now: UInt64) -> Wake? {
        guard case .running(var run) = entries[id]?.phase, run.generation == generation else { return nil }
        run.verifying = true
        entries[id]?.phase = .running(run)
        return outbox.note(.changed(item(id, now: now)))
    }

    /// Run `generation`'s `.part` of `size` bytes is about to be renamed to the name: records that the
    /// file will be the manager's. False when the run is no longer wanted (do not rename).
    mutating func finishing(_ id: ItemID, generation: UInt64, size: Int64) -> Bool {
        guard isCurrent(id, generation), !isClosed else { return false }
        entries[id]?.ownsFile = true
        entries[id]?.finishingSize = size
        record(DownloadJournal.Record(op: .finishing, id: id.rawValue, size: size))
        return true
    }

    /// How a run ended.
    enum Outcome {
        case completed
        case failed(ItemError)
        /// Cancelled without the manager asking (it asks only after leaving `running`).
        case cancelled
    }

    /// Run `generation` ended.
    mutating func runEnded(_ id: ItemID, generation: UInt64, _ outcome: Outcome, now: UInt64) -> Actions {
        guard isCurrent(id, generation), let entry = entries[id] else { return staleRunEnded(generation, outcome) }
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
            let failure = ItemError(kind: .other, message: "the download of \(entry.url.redactedString) was cancelled")
            actions.merge(transition(id, to: .failed(failure), now: now))
            record(.state(id.rawValue, .failed(failure)))
            actions.writesJournal = true
        }
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    // MARK: Internals

    /// What a run that is no longer current leaves to do when it reports its end.
    enum AfterEnd {
        /// Its item was cancelled or removed: remove its `.part`, unless an item of the name holds it
        /// again (resumed or added again: running, pending, suspended or failed, it keeps its `.part`
        /// to resume from).
        case removePart(name: String, paths: [String])
        /// Its item was removed as its file took the name (the name is marked cleaning until this
        /// is done): the file is a completed item's then, removed only when `deletingFile`; a run
        /// that did not get there leaves its `.part`, which nobody owns any more.
        case removedWhileFinalizing(name: String, deletingFile: Bool)
    }

    /// The `.part` of a cancelled or removed item is removed at once, and again when its run
    /// reports its end: a run that was starting as it was cancelled may have made it meanwhile.
    mutating func unlinkPartWhenEnded(_ entry: Entry) {
        guard case .running(let run) = entry.phase else { return }
        afterEnd[run.generation] = .removePart(name: entry.name, paths: partFiles(of: entry))
    }

    /// Marks the name of an item whose run is being stopped as cleaning until that run reports
    /// its end (a run that has not opened its `.part` yet may still do so, until it is cancelled).
    mutating func holdNameUntilEnded(_ entry: Entry) {
        guard case .running(let run) = entry.phase else { return }
        stopping[run.generation] = entry.name
        cleaning[entry.name, default: 0] += 1
    }

    /// A run that is no longer current ended: removes what its item's cancellation or removal left.
    mutating func staleRunEnded(_ generation: UInt64, _ outcome: Outcome) -> Actions {
        var actions = Actions()
        // Released once this action's unlinks (if any) are done.
        if let name = stopping.removeValue(forKey: generation) { actions.cleaning.append(name) }
        switch afterEnd.removeValue(forKey: generation) {
        case nil:
            break
        case .removePart(let name, let paths):
            if let id = names[name], let phase = entries[id]?.phase, !phase.isCancelled { break }
            clean(name, paths, into: &actions)
        case .removedWhileFinalizing(let name, let deletingFile):
            if case .completed = outcome {
                if deletingFile { actions.unlinks.append(name) }
            } else {
                let parts = PartNames(for: name)
                actions.unlinks += [parts.part, parts.metadata]
            }
            // The mark was taken by `remove`: it is released once these unlinks are done.
            actions.cleaning.append(name)
        }
        return actions
    }

    /// Unlinks `paths` of `name` after the lock, marking the name until `cleaned` is told.
    mutating func clean(_ name: String, _ paths: [String], into actions: inout Actions) {
        actions.unlinks += paths
        actions.cleaning.append(name)
        cleaning[name, default: 0] += 1
    }

    /// Whether the item's run recorded `finishing`: its `.part` is complete and is being (or was)
    /// renamed to the name, which no cancel or suspend undoes.
    func isFinalizing(_ entry: Entry) -> Bool {
        guard case .running = entry.phase else { return false }
        return entry.finishingSize != nil
    }

    /// Whether run `generation` is the one item `id` is running.
    func isCurrent(_ id: ItemID, _ generation: UInt64) -> Bool {
        guard case .running(let run) = entries[id]?.phase else { return false }
        return run.generation == generation
    }

    func state(of entry: Entry) -> DownloadManager.State {
        switch entry.phase {
        case .pending: .pending
        case .running(let run): run.verifying ? .verifying : .running
        case .suspended, .held: .suspended
        case .completed: .completed
        case .failed(let failure): .failed(failure)
        case .cancelled: .cancelled
        }
    }

    /// Moves an item to `phase` (never `pending`: see `requeue`), freeing its slot and cancelling its
    /// run when it was running, and notes the change.
    mutating func transition(_ id: ItemID, to phase: Phase, now: UInt64) -> Actions {
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
    mutating func requeue(_ id: ItemID, now: UInt64) -> Actions {
        guard let entry = entries[id] else { return Actions() }
        switch entry.phase {
        case .suspended, .failed, .cancelled, .held: break
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
    mutating func enqueue(_ id: ItemID) {
        guard let entry = entries[id] else { return }
        nextTicket += 1
        entries[id]?.phase = .pending(ticket: nextTicket)
        queues[entry.host, default: SlotQueue()].append(id, ticket: nextTicket)
        pendingCount += 1
        hasActivity = true
    }

    /// Slots in `queues`, stale ones included (for tests of their bound).
    var queuedSlots: Int { queues.values.reduce(0) { $0 + $1.slotCount } }

    /// Updates the counts for an item leaving its phase.
    mutating func leave(_ entry: Entry) {
        switch entry.phase {
        case .pending:
            pendingCount -= 1
            queues[entry.host]?.remove(entry.id)
            if queues[entry.host]?.isEmpty == true { queues[entry.host] = nil }
        case .running:
            runningCount -= 1
            runningByHost[entry.host, default: 1] -= 1
            if runningByHost[entry.host] == 0 { runningByHost[entry.host] = nil }
        default:
            break
        }
    }

    /// Starts pending items, oldest first, while the width and their hosts allow.
    mutating func claimStarts(now: UInt64, into actions: inout Actions) {
        while !isClosed, !holdsStarts, runningCount < limit, let id = nextStartable() {
            guard let entry = entries[id] else { continue }
            nextGeneration += 1
            leave(entry)
            entries[id]!.phase = .running(Run(generation: nextGeneration))
            entries[id]!.finishingSize = nil
            runningCount += 1
            runningByHost[entry.host, default: 0] += 1
            entries[id]!.meter.reset()
            entries[id]!.meter.record(entry.transferred, at: now)
            totalMeter.record(totalTransferred, at: now)
            actions.wake(outbox.note(.changed(item(id, now: now))))
            actions.starts.append(
                Start(
                    id: id, generation: nextGeneration, url: entry.url, name: entry.name, checksum: entry.checksum,
                    replacesFile: entry.replacesFile))
        }
    }

    /// The pending item to start next: the oldest whose host has a free slot.
    mutating func nextStartable() -> ItemID? {
        var best: (host: String, ticket: UInt64)?
        for host in Array(queues.keys) {
            if let perHost, runningByHost[host, default: 0] >= perHost { continue }
            guard let head = queues[host]?.first() else {
                queues[host] = nil
                continue
            }
            // Its files are being unlinked: the host waits for that (a moment), keeping its order.
            if let name = entries[head.key]?.name, cleaning[name] != nil { continue }
            if best == nil || head.ticket < best!.ticket { best = (host, head.ticket) }
        }
        guard let best else { return nil }
        return queues[best.host]!.popFirst()
    }

    /// Sends `allFinished` and resumes the waiters when nothing is active any more — and no file of
    /// an item is being unlinked or held by a stopped run: a waiter that then closes the manager (or
    /// exits) leaves no `.part` behind. `cleaned` checks again.
    mutating func checkDrain(now: UInt64) -> Actions {
        var actions = Actions()
        guard activeCount == 0, cleaning.isEmpty, hasActivity, !isClosed else { return actions }
        hasActivity = false
        let summary = summary(now: now)
        actions.wake(outbox.note(.allFinished(summary)))
        actions.waiters = waiters.takeAll().map { ($0, summary) }
        return actions
    }

    func file(named name: String) -> URL {
        directory.appendingPathComponent(name, isDirectory: false)
    }

    /// The name of an item's file in the directory.
    func file(of entry: Entry) -> String {
        entry.name
    }

    /// The names of an item's `.part` and its metadata in the directory.
    func partFiles(of entry: Entry) -> [String] {
        let parts = PartNames(for: entry.name)
        return [parts.part, parts.metadata]
    }
}

extension DownloadManagerStateMachine: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Entry: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Phase: Sendable where Handle: Sendable {}
extension DownloadManagerStateMachine.Run: Sendable where Handle: Sendable {}
