import Foundation
import JobKit

/// The state of a `DownloadManager` as a value: its items, its slots, its journal records waiting to
/// be written and its deliveries waiting for the result queue. Every transition returns what to do
/// once the lock is released (`Actions`); it never calls out, never touches a file and never reads a
/// clock (`now` is passed in, in nanoseconds). `Handle` is what cancels a run (a `JobHandle`; tests
/// use anything).
///
/// It orchestrates small values that each keep their state private and own one rule:
/// - `ItemTable`: the items, their order, and which item holds each name;
/// - `HostScheduler`: which pending item starts next, within the total and per-host limits;
/// - `NameGuard`: nothing of a name starts until its previous run has ended and its files are gone;
/// - `JournalBuffer`: the records waiting to be written, and when the journal is compacted;
/// - `Outbox`: the events waiting for delivery, and when to wake the result queue;
/// - `Waiters`: the tasks waiting for the manager to drain.
///
/// Its extensions are in `DownloadManagerStateMachine+*.swift` (its types, adding, controls,
/// snapshots, the journal, waiters, names, restoring).
struct DownloadManagerStateMachine<Handle> {
    typealias ItemID = DownloadManager.ItemID
    typealias ItemError = DownloadManager.ItemError
    typealias Wake = DeliveryWake
    typealias JournalWrite = JournalBuffer.Write

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
        /// Runs (by generation) whose URL refresher's answer is dropped: their item was stopped or
        /// the manager closed. Cancel the refreshers' tasks.
        var dropsRefreshes: [UInt64] = []

        /// Keeps the more urgent of the two wakes (a `later` one is stale once `now` was asked).
        mutating func wake(_ other: Wake?) {
            guard let other else { return }
            if wake != .now { wake = other }
        }

        /// Adds the unlinks of a cleanup, and the names they release.
        mutating func merge(_ cleanup: NameGuard.Cleanup) {
            unlinks += cleanup.unlinks
            cleaning += cleanup.names
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
            dropsRefreshes += other.dropsRefreshes
        }
    }

    let directory: URL
    let interval: UInt64
    let window: UInt64
    /// Items restored as pending start (else they are `held`).
    let startsRestored: Bool

    var items = ItemTable<Handle>()
    var scheduler: HostScheduler
    var nameGuard = NameGuard()
    /// Removed items whose files are still to be unlinked (their names held by `nameGuard`), by name:
    /// a compacted journal keeps them, so that a process that dies before the unlinks leaves the next
    /// one their `.part`s to clean (else nothing would name them).
    var removedUncleaned: [String: DownloadJournal.Entry] = [:]
    var journal = JournalBuffer()
    /// Whose turn it is to write the journal, and what waits on its writes.
    var pen = JournalPen()
    /// The URL refresher's tasks that have not answered, by the generation of the run they answer
    /// for: cancelled when their answer is dropped (`Actions.dropsRefreshes`).
    var refreshTasks: [UInt64: Task<Void, Never>] = [:]
    /// A record waiting (or written) overrules a `finishing` that may be on disk (the rename failed,
    /// or the item was removed as it finished): the journal is synced before the next unlink, with
    /// `.system` durability. While `finishing` is the disk's last word on an item, a recovery that
    /// finds no `.part` takes the file of that size under the name for the item's; had the `.part`
    /// gone and the later records been lost with the power, a file somebody else put there would
    /// become the manager's, to delete with `deletingFile`.
    private var journalSyncOwed = false
    var outbox = Outbox()
    /// The consumers of `updates()` (`UpdateBroadcaster` feeds and drains them).
    var consumers = UpdateBroadcastStateMachine<CheckedContinuation<DownloadManager.Update?, Never>>()
    var waiters = Waiters<DownloadManager.Summary>()
    var nextGeneration: UInt64 = 0
    /// The bytes this process moved, but for what runs counted since their last `fold`.
    var totalTransferred: Int64 = 0
    /// What the runs counted and the state has not taken, and whether a delivery will show it.
    let progress = ProgressTally()
    var totalMeter: SpeedMeter
    /// An item became pending since the last drain: the next drain sends `allFinished`.
    var hasActivity = false
    var isClosed = false
    var holdsStarts = false

    init(
        directory: URL, limit: Int, perHost: Int?, interval: Duration, window: Duration, startsRestored: Bool = true
    ) {
        self.directory = directory
        self.startsRestored = startsRestored
        scheduler = HostScheduler(limit: limit, perHost: perHost)
        self.interval = interval.nanoseconds
        self.window = max(window.nanoseconds, 1_000_000)
        totalMeter = SpeedMeter(window: self.window)
    }

    /// The most runs at once.
    var limit: Int { scheduler.limit }

    // MARK: Runs

    /// Keeps the handle of the run `generation`; returns it when that run is no longer wanted (cancel it).
    mutating func attach(_ handle: Handle, to id: ItemID, generation: UInt64) -> Handle? {
        guard case .running(var run) = items[id]?.phase, run.generation == generation, run.handle == nil else {
            return handle
        }
        run.handle = handle
        items.update(id) { $0.phase = .running(run) }
        return nil
    }

    /// A response of run `generation` starts writing at `offset`, of `total` bytes.
    mutating func began(_ id: ItemID, generation: UInt64, offset: Int64, total: Int64?, now: UInt64) -> Wake? {
        guard isCurrent(id, generation) else { return nil }
        // An earlier attempt's bytes were moved; the file now holds `offset`.
        fold(id)
        items.update(id) {
            $0.received = offset
            $0.expected = total
            $0.runsRefreshedURL = false
        }
        return progressCounted(now: now)
    }

    /// Run `generation` wrote `count` more bytes: what its download does (`RunProgress.add`, without
    /// the lock), then, when that says so, `progressCounted`.
    mutating func received(_ id: ItemID, generation: UInt64, count: Int, now: UInt64) -> Wake? {
        guard case .running(let run) = items[id]?.phase, run.generation == generation else { return nil }
        return run.progress.add(count) ? progressCounted(now: now) : nil
    }

    /// A run counted bytes and no delivery was waiting to show them: one will (none once closed: the
    /// final delivery was the last).
    mutating func progressCounted(now: UInt64) -> Wake? {
        guard !isClosed else { return nil }
        progress.setDeliveryWaiting(true)
        return outbox.noteProgress(now: now, interval: interval)
    }

    /// Takes what the run of `id` counted into the item and the totals: before the file's count starts
    /// again (`began`), or for the last time, `retiring`, when the run stops (`leave`, `close`): its
    /// late chunks then count nowhere.
    mutating func fold(_ id: ItemID, retiring: Bool = false) {
        guard case .running(let run) = items[id]?.phase else { return }
        let count = run.progress.take(retiring: retiring)
        guard count != 0 else { return }
        items.update(id) {
            $0.received = $0.received.addingSaturating(count)
            $0.transferred = $0.transferred.addingSaturating(count)
        }
        totalTransferred = totalTransferred.addingSaturating(count)
    }

    /// The bytes this process moved, with what runs counted since their last `fold`.
    var totalTransferredNow: Int64 { totalTransferred.addingSaturating(progress.unfoldedBytes) }

    /// Run `generation` computes the checksum of its complete `.part`.
    mutating func verifying(_ id: ItemID, generation: UInt64, now: UInt64) -> Wake? {
        guard case .running(var run) = items[id]?.phase, run.generation == generation else { return nil }
        run.verifying = true
        items.update(id) { $0.phase = .running(run) }
        return outbox.note(.changed(item(id, now: now)))
    }

    /// Run `generation` opens at most `count` connections from now on (at least one counts): it
    /// keeps that many of its slots and gives back the rest, and pending items start in them. Its
    /// slots only go down: a count at or above them, or from a stale run, changes nothing.
    mutating func connectionsUsed(_ id: ItemID, generation: UInt64, count: Int, now: UInt64) -> Actions {
        guard let entry = items[id], case .running(var run) = entry.phase, run.generation == generation else {
            return Actions()
        }
        let kept = max(count, 1)
        guard kept < run.slots else { return Actions() }
        scheduler.runGaveBack(host: entry.host, slots: run.slots - kept)
        run.slots = kept
        items.update(id) { $0.phase = .running(run) }
        var actions = Actions()
        claimStarts(now: now, into: &actions)
        return actions
    }

    /// Run `generation`'s `.part` of `size` bytes is about to be renamed to the name: records that the
    /// file will be the manager's. False when the run is no longer wanted (do not rename).
    mutating func finishing(_ id: ItemID, generation: UInt64, size: Int64) -> Bool {
        guard isCurrent(id, generation), !isClosed else { return false }
        items.update(id) {
            $0.ownsFile = true
            $0.finishingSize = size
        }
        record(DownloadJournal.Record(op: .finishing, id: id.rawValue, size: size))
        return true
    }

    /// Run `generation` ended.
    mutating func runEnded(_ id: ItemID, generation: UInt64, _ outcome: Outcome, now: UInt64) -> Actions {
        guard isCurrent(id, generation), let entry = items[id] else { return staleRunEnded(generation, outcome) }
        var actions = Actions()
        switch outcome {
        case .completed:
            let size = entry.finishingSize ?? entry.receivedNow
            fold(id)
            items.update(id) {
                $0.received = size
                $0.expected = size
            }
            actions.merge(transition(id, to: .completed(size: size), now: now))
            record(DownloadJournal.Record(op: .done, id: id.rawValue, size: size))
            actions.writesJournal = true
            actions.syncsJournal = true
        case .failed(let failure):
            actions.merge(transition(id, to: .failed(failure), now: now))
            record(.state(id.rawValue, .failed(failure)))
            actions.writesJournal = true
            overrulesFinishing(entry)
            if failure.kind == .checksumMismatch { actions.merge(nameGuard.clean(entry.name, entry.partFiles)) }
        case .cancelled:
            let failure = ItemError(kind: .other, message: "the download of \(entry.url.redactedString) was cancelled")
            actions.merge(transition(id, to: .failed(failure), now: now))
            record(.state(id.rawValue, .failed(failure)))
            actions.writesJournal = true
            overrulesFinishing(entry)
        }
        claimStarts(now: now, into: &actions)
        actions.merge(checkDrain(now: now))
        return actions
    }

    // MARK: Internals

    /// `entry`'s run recorded `finishing` and ended without the name (its rename failed): the record
    /// just made overrules it, and must reach the disk before any unlink (`journalSyncOwed`). The
    /// size goes: a compaction while the item waits would write `finishing` again.
    private mutating func overrulesFinishing(_ entry: Entry) {
        guard entry.finishingSize != nil else { return }
        journalSyncOwed = true
        items.update(entry.id) { $0.finishingSize = nil }
    }

    /// Whether the journal must be synced before the next unlink; taken by the writer, which owes it
    /// again (`oweJournalSync`) when its write or sync fails.
    mutating func takeJournalSync() -> Bool {
        defer { journalSyncOwed = false }
        return journalSyncOwed
    }

    mutating func oweJournalSync() { journalSyncOwed = true }

    /// A run that is no longer current ended: removes what its item's cancellation or removal left.
    mutating func staleRunEnded(_ generation: UInt64, _ outcome: Outcome) -> Actions {
        var completed = false
        if case .completed = outcome { completed = true }
        let items = items
        var actions = Actions()
        // Removed as it finished, and it did not get the name: its `.part` goes once the removal's
        // record is on disk.
        if !completed && nameGuard.isRemovedWhileFinalizing(run: generation) { journalSyncOwed = true }
        actions.merge(nameGuard.runEnded(generation, completed: completed, isHeldAgain: items.holdsPart))
        return actions
    }

    /// Run `run` of `entry` is stopped (its item suspended, cancelled, removed or given a new URL):
    /// the name is held until the run ends, which then removes the `.part` when `removingPart`. A
    /// run waiting for the URL refresher has ended already (its download let go of the `.part`):
    /// nothing is held, and the refresher's answer is dropped.
    mutating func stop(_ run: Run, of entry: Entry, removingPart: Bool, into actions: inout Actions) {
        guard !run.refreshing else {
            actions.dropsRefreshes.append(run.generation)
            return
        }
        nameGuard.stopped(run: run.generation, of: entry.name, removingPart: removingPart ? entry.partFiles : nil)
    }

    /// Claims the next pending item the scheduler allows whose name is free; nil when none.
    mutating func claimNext() -> (id: ItemID, slots: Int)? {
        // Moved out while it decides, so that the check can read the items and names (a copy of those
        // would be copied whole on the next change).
        var scheduler = self.scheduler
        self.scheduler = HostScheduler(limit: 1, perHost: nil)
        defer { self.scheduler = scheduler }
        let claimed = scheduler.claimNext(
            isBlocked: { id in
                guard let name = items[id]?.name else { return false }
                return nameGuard.isHeld(name)
            },
            connections: { id in items[id]?.connections ?? 1 })
        return claimed.map { ($0.id, $0.slots) }
    }

    /// Whether the item's run recorded `finishing`: its `.part` is complete and is being (or was)
    /// renamed to the name, which no cancel or suspend undoes.
    func isFinalizing(_ entry: Entry) -> Bool {
        guard case .running = entry.phase else { return false }
        return entry.finishingSize != nil
    }

    /// Whether run `generation` is the one item `id` is running.
    func isCurrent(_ id: ItemID, _ generation: UInt64) -> Bool {
        items[id]?.runningGeneration == generation
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
        guard let entry = items[id] else { return Actions() }
        var actions = Actions()
        if case .running(let run) = entry.phase, let handle = run.handle {
            if case .completed = phase {} else if case .failed = phase {} else { actions.cancels.append(handle) }
        }
        leave(entry)
        items.update(id) {
            $0.phase = phase
            $0.meter.reset()
            // Its `.part` goes (after what its run counted was taken: nothing counts it again).
            if case .cancelled = phase {
                $0.received = 0
                $0.expected = nil
            }
        }
        actions.wake(outbox.note(.changed(item(id, now: now))))
        return actions
    }

    /// Queues a suspended, failed or cancelled item again.
    mutating func requeue(_ id: ItemID, now: UInt64) -> Actions {
        guard let entry = items[id] else { return Actions() }
        switch entry.phase {
        case .suspended, .failed, .cancelled, .held: break
        default: return Actions()
        }
        var actions = Actions()
        // Queued again by a caller: its next refusal may ask the URL refresher again.
        items.update(id) { $0.runsRefreshedURL = false }
        enqueue(id)
        record(.state(id.rawValue, .pending))
        actions.writesJournal = true
        actions.wake(outbox.note(.changed(item(id, now: now))))
        return actions
    }

    /// Makes an item pending at the back of its host's queue.
    mutating func enqueue(_ id: ItemID) {
        guard let url = items[id]?.url else { return }
        // The host of its URL now: one given since (`replaceURL`) counts from here, while the slot a
        // run still holds is given back under the host it was taken for (`leave`).
        let host = Self.host(of: url)
        let ticket = scheduler.enqueue(id, host: host)
        items.update(id) {
            $0.host = host
            $0.phase = .pending(ticket: ticket)
        }
        hasActivity = true
    }

    /// Frees what an item leaving its phase held in the scheduler: its queue slot or its run's slot.
    /// Takes what a run counted first: its counter goes with it.
    mutating func leave(_ entry: Entry) {
        switch entry.phase {
        case .pending: scheduler.withdraw(entry.id, host: entry.host)
        case .running(let run):
            fold(entry.id, retiring: true)
            scheduler.runEnded(host: entry.host, slots: run.slots)
        default: break
        }
    }

    /// Starts pending items, oldest first, while the width and their hosts allow, and their names are
    /// free.
    mutating func claimStarts(now: UInt64, into actions: inout Actions) {
        guard !isClosed, !holdsStarts else { return }
        while let (id, slots) = claimNext() {
            guard let entry = items[id] else { preconditionFailure("item \(id.rawValue) was queued but is gone") }
            nextGeneration += 1
            let generation = nextGeneration
            let counter = RunProgress(tally: progress)
            items.update(id) {
                $0.phase = .running(Run(generation: generation, progress: counter, slots: slots))
                $0.mayHavePart = true
                $0.finishingSize = nil
                $0.meter.reset()
                $0.meter.record(entry.transferred, at: now)
            }
            totalMeter.record(totalTransferredNow, at: now)
            actions.wake(outbox.note(.changed(item(id, now: now))))
            actions.starts.append(
                Start(
                    id: id, generation: generation, url: entry.url, name: entry.name, checksum: entry.checksum,
                    replacesFile: entry.replacesFile, headers: entry.headers, connections: slots, progress: counter))
        }
    }

    /// Sends `allFinished` and resumes the waiters when nothing is active any more — and no file of
    /// an item is being unlinked or held by a stopped run: a waiter that then closes the manager (or
    /// exits) leaves no `.part` behind. `cleaned` checks again.
    mutating func checkDrain(now: UInt64) -> Actions {
        var actions = Actions()
        guard scheduler.activeCount == 0, nameGuard.isEmpty, hasActivity, !isClosed else { return actions }
        hasActivity = false
        let summary = summary(now: now)
        actions.wake(outbox.note(.allFinished(summary)))
        actions.waiters = waiters.takeAll().map { ($0, summary) }
        return actions
    }
}

extension DownloadManagerStateMachine: Sendable where Handle: Sendable {}
