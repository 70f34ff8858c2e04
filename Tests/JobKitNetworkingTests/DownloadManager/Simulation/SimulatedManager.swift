import Foundation
import JobKit

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `DownloadManager` whose executor runs in the simulation: the real state machine, the real
/// download-attempt state machine, the real journal format and recovery, carrying out their actions
/// on a `SimulatedDisk` and a `SimulatedServer` the way `DownloadManager` and `Download` do, with
/// every callback an event the schedule delivers in an order of its choosing.
struct SimulatedManager {
    typealias Machine = DownloadManagerStateMachine<UInt64>
    typealias ItemID = DownloadManager.ItemID

    private(set) var machine: Machine
    private(set) var runs: [UInt64: SimulatedRun] = [:]
    let durability: Durability
    /// Unlinks owed until a journal write succeeds, with the names they clean.
    private var owedUnlinks: [String] = []
    private var owedCleaning: [String] = []
    private(set) var isClosed = false
    /// `close()` wrote the journal, so it removed what stopped runs left (journal first).
    private(set) var closedCleanly = false
    /// A journal write failed: the manager tries again later (`retryJournal`).
    private(set) var retryOwed = false
    /// Adds refused because the journal's sync failed: a power loss before the next commit may keep
    /// their records (the refused add comes back; a kill never brings it back).
    private(set) var doubtfulAdds: [ItemID] = []
    /// With `.system`, an item completed: the journal is synced soon (`syncJournalSoon`).
    private(set) var syncOwed = false
    var log: [String] = []
    /// Rules the executor saw broken: unlinks the journal on disk did not justify (see
    /// `noteUnjustifiedUnlinks`), two runs of one name at once, what runs saw.
    private(set) var brokenRules: [String] = []

    static let directory = URL(fileURLWithPath: "/simulated")

    /// Opens the folder as `DownloadManager.init` does: recovers the journal, rewrites it, restores.
    init(disk: inout SimulatedDisk, limit: Int, perHost: Int?, durability: Durability) throws {
        self.durability = durability
        let recovery = try JournalRecovery(journal: disk.journal, facts: disk.facts)
        if !recovery.unlinks.isEmpty, durability == .system { try disk.syncJournal() }
        for name in recovery.unlinks { disk.unlink(name) }
        try disk.replaceJournal(recovery.journal)
        if durability == .system { disk.sync() }
        machine = Machine(
            directory: Self.directory, limit: limit, perHost: perHost, interval: .milliseconds(100),
            window: .seconds(2))
        let actions = machine.restore(recovery.contents, partLengths: recovery.partLengths, now: 0)
        perform(actions, disk: &disk)
    }

    // MARK: The API, as `DownloadManager` runs it

    mutating func add(_ requests: [DownloadManager.Request], disk: inout SimulatedDisk) throws -> [ItemID] {
        guard !isClosed else { throw DownloadManagerError.closed }
        let prepared = try machine.prepare(requests)
        try writeJournal(disk: &disk)
        let records = Array(Machine.records(of: prepared))
        if !records.isEmpty {
            // `JournalFile.appendSynced`: all or nothing, a failed sync cuts the lines back off.
            let before = disk.journal.count
            try disk.appendJournal(DownloadJournal.encode(records))
            if durability == .system {
                do {
                    try disk.syncJournal()
                } catch {
                    disk.truncateJournal(to: before)
                    // The cut is synced in turn; while it is not (that sync failed too), a power loss
                    // may keep the lines (an fsync that failed may have written them).
                    if (try? disk.syncJournal()) == nil {
                        doubtfulAdds += records.map { ItemID(rawValue: $0.id) }
                    }
                    throw error
                }
            }
        }
        let (ids, actions) = machine.commit(prepared, now: 0)
        perform(actions, disk: &disk)
        return ids
    }

    /// A control (`suspend`, `resume`, `cancel`, `remove`); returns the journal's failure, if any.
    @discardableResult
    mutating func control(
        disk: inout SimulatedDisk, _ transition: (inout Machine) throws(DownloadManagerError) -> Machine.Actions
    ) throws -> DownloadManagerError? {
        guard !isClosed else { throw DownloadManagerError.closed }
        let actions = try transition(&machine)
        return perform(actions, disk: &disk)
    }

    /// An operation on every item (`suspendAll`, …).
    mutating func all(
        disk: inout SimulatedDisk, _ transition: (inout Machine, ItemID) throws(DownloadManagerError) -> Machine.Actions
    ) {
        var actions = Machine.Actions()
        machine.holdStarts()
        for id in machine.ids {
            if let more = try? transition(&machine, id) { actions.merge(more) }
        }
        actions.merge(machine.releaseStarts(now: 0))
        perform(actions, disk: &disk)
    }

    mutating func setLimit(_ limit: Int, disk: inout SimulatedDisk) {
        perform(machine.setLimit(limit, now: 0), disk: &disk)
    }

    /// `close()`: the journal compacted, owed unlinks done, runs cancelled (they end later).
    mutating func close(disk: inout SimulatedDisk) {
        guard !isClosed else { return }
        let actions = machine.close(now: 0)
        for generation in actions.cancels { runs[generation]?.cancelled = true }
        let compacted: Bool
        do {
            try Self.apply(machine.compacted(), durability: durability, disk: &disk)
            compacted = true
        } catch {
            compacted = false
        }
        isClosed = true
        closedCleanly = compacted
        if compacted {
            for name in owedUnlinks + actions.unlinks { disk.unlink(name) }
            owedUnlinks = []
            owedCleaning = []
        }
    }

    /// The retry `DownloadManager.retryJournalLater` schedules after a failed write.
    mutating func retryJournal(disk: inout SimulatedDisk) {
        retryOwed = false
        var retry = Machine.Actions()
        retry.writesJournal = true
        perform(retry, disk: &disk)
    }

    /// The sync `DownloadManager.syncJournalSoon` queues after a completion, with `.system`.
    mutating func syncJournal(disk: inout SimulatedDisk) {
        syncOwed = false
        disk.sync()
    }

    // MARK: Carrying out actions

    /// `DownloadManager.writeJournal(to:)`: the records, then the sync owed before the next unlink.
    mutating func writeJournal(disk: inout SimulatedDisk) throws {
        guard !isClosed else { return }
        let write = machine.takeJournal()
        let syncs = machine.takeJournalSync()
        if let write {
            do {
                try Self.apply(write, durability: durability, disk: &disk)
            } catch {
                machine.untake(write)
                if syncs { machine.oweJournalSync() }
                throw error
            }
        }
        guard syncs, durability == .system else { return }
        do {
            try disk.syncJournal()
        } catch {
            machine.oweJournalSync()
            throw error
        }
    }

    static func apply(_ write: Machine.JournalWrite, durability: Durability, disk: inout SimulatedDisk) throws {
        switch write {
        case .append(let records): try disk.appendJournal(DownloadJournal.encode(records))
        case .rewrite(let header, let records):
            // `JournalFile.replace`: the new file synced before its rename, the folder after.
            try disk.replaceJournal(DownloadJournal.encode(header: header, records))
            if durability == .system { disk.sync() }
        }
    }

    @discardableResult
    mutating func perform(_ actions: Machine.Actions, disk: inout SimulatedDisk) -> DownloadManagerError? {
        var failure: DownloadManagerError?
        let owes = !(owedUnlinks.isEmpty && owedCleaning.isEmpty)
        if actions.writesJournal || owes || !actions.unlinks.isEmpty {
            do {
                guard !isClosed else { throw DownloadManagerError.closed }
                try writeJournal(disk: &disk)
            } catch {
                failure = (error as? DownloadManagerError) ?? .closed
            }
        }
        owedUnlinks += actions.unlinks
        owedCleaning += actions.cleaning
        var unlinks: [String] = []
        var cleaning: [String] = []
        if failure == nil {
            (unlinks, cleaning) = (owedUnlinks, owedCleaning)
            (owedUnlinks, owedCleaning) = ([], [])
        }
        if let failure, failure != .closed { retryOwed = true }
        if actions.syncsJournal, durability == .system { syncOwed = true }
        for generation in actions.cancels { runs[generation]?.cancelled = true }
        noteUnjustifiedUnlinks(unlinks, disk: disk)
        for name in unlinks { disk.unlink(name) }
        if !cleaning.isEmpty { perform(machine.cleaned(cleaning, now: 0), disk: &disk) }
        for start in actions.starts { launch(start, disk: &disk) }
        return failure
    }

    /// Journal first: a file the journal on disk still gives to an item (finishing or completed) is
    /// never unlinked — a crash would bring the item back with its file gone. Nor is the `.part` of
    /// an item it says is finishing: a recovery would take whatever file of that size is under the
    /// name for the item's. (Another `.part` may go before its record: at worst an item downloads
    /// again.)
    private mutating func noteUnjustifiedUnlinks(_ names: [String], disk: SimulatedDisk) {
        let present = names.filter { disk.facts($0) != .missing }
        guard !present.isEmpty, let onDisk = try? DownloadJournal.parse(disk.journal) else { return }
        // What the disk keeps through a power loss (with `.system`; a process's death keeps every write).
        let durable = durability == .system ? (try? DownloadJournal.parse(disk.durableJournal)) : onDisk
        for name in present {
            if name.hasSuffix(".part"),
                let entry = durable?.entries.first(where: { $0.name == name.dropLast(5) }),
                case .finishing = entry.status
            {
                brokenRules.append(
                    "journal first: unlinked \(name) while the journal says item \(entry.id) is finishing")
            }
            guard let entry = onDisk.entries.first(where: { $0.name == name }) else { continue }
            switch entry.status {
            case .finishing, .completed:
                brokenRules.append(
                    "journal first: unlinked \(name) while the journal says item \(entry.id) is \(entry.status)")
            case .pending, .suspended, .failed, .cancelled:
                break
            }
        }
    }

    private mutating func launch(_ start: Machine.Start, disk: inout SimulatedDisk) {
        guard machine.isCurrent(start.id, start.generation) else {
            runs[start.generation] = SimulatedRun(start: start, ended: .cancelled)
            return
        }
        if !start.replacesFile, case .file = disk.facts(start.name) {
            let failure = DownloadManager.ItemError(kind: .fileInTheWay, message: "\(start.name) exists")
            runs[start.generation] = SimulatedRun(start: start, ended: .failed(failure))
            return
        }
        if let other = runs.values.first(where: { $0.start.name == start.name && !$0.isEnded }) {
            brokenRules.append("two runs of \(start.name) at once: \(other.start.generation) and \(start.generation)")
        }
        runs[start.generation] = SimulatedRun(start: start)
        if let stale = machine.attach(start.generation, to: start.id, generation: start.generation) {
            runs[stale]?.cancelled = true
        }
    }

    // MARK: Running

    /// The generations of the runs that have something to do.
    var activeRuns: [UInt64] { runs.keys.sorted() }

    /// One step of run `generation`: what its body, its transport or its end does next.
    mutating func step(
        _ generation: UInt64, disk: inout SimulatedDisk, server: SimulatedServer, random: inout SimulationRandom
    ) {
        guard var run = runs[generation] else { return }
        defer { if let broken = runs[generation]?.broken { brokenRules.append(broken) } }
        let start = run.start
        if run.cancelled, !run.isEnded, !run.isFinalizing {
            run.end(.cancelled, disk: &disk)
            runs[generation] = run
            return
        }
        switch run.step {
        case .finalizing:
            finalize(&run, disk: &disk)
            runs[generation] = run
        case .ended(let outcome):
            runs[generation] = nil
            log.append("  run \(generation) \(start.name) ended: \(outcome)")
            perform(machine.runEnded(start.id, generation: generation, outcome, now: 0), disk: &disk)
        default:
            let event = run.advance(disk: &disk, server: server, random: &random, log: &log)
            runs[generation] = run
            switch event {
            case .began(let offset, let total)?:
                _ = machine.began(start.id, generation: generation, offset: offset, total: total, now: 0)
            case .received(let count)?:
                _ = machine.received(start.id, generation: generation, count: count, now: 0)
            case nil:
                break
            }
        }
    }

    /// `DownloadManager.finalizing` and `Download.finalize`: the checksum, the `finishing` record
    /// (synced with `.system`), then the `.part` synced, renamed never replacing, the folder synced.
    private mutating func finalize(_ run: inout SimulatedRun, disk: inout SimulatedDisk) {
        let start = run.start
        let parts = PartNames(for: start.name)
        let generation = start.generation
        let length = Int64(disk.bytes(parts.part)?.count ?? 0)
        if let checksum = start.checksum {
            _ = machine.verifying(start.id, generation: generation, now: 0)
            let actual = Checksum.digest(checksum.algorithm, of: disk.bytes(parts.part) ?? [])
            guard actual == checksum else {
                let message = "checksum mismatch for \(start.name): expected \(checksum), got \(actual)"
                return run.end(
                    .failed(DownloadManager.ItemError(kind: .checksumMismatch, message: message)), disk: &disk)
            }
        }
        guard machine.finishing(start.id, generation: generation, size: length) else {
            return run.end(.cancelled, disk: &disk)
        }
        do {
            try writeJournal(disk: &disk)
            if durability == .system { disk.sync() }
            if durability == .system { try disk.syncFile() }
            // The rename happens only if the run is not cancelled by then (`PartFile.finalize`).
            guard !run.cancelled else { return run.end(.cancelled, disk: &disk) }
            try disk.rename(parts.part, to: start.name, replacing: start.replacesFile)
            if durability == .system { disk.sync() }
            disk.unlink(parts.metadata)
            run.end(.completed, disk: &disk)
        } catch {
            run.end(.failed(DownloadManager.ItemError(error)), disk: &disk)
        }
    }
}
