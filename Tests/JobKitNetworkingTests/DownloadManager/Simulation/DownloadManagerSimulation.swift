import Foundation
import JobKit

@testable import JobKitNetworking

/// One schedule of the simulation: a seed drives the server, the disk, the controls, kills, power
/// losses and the order of every callback; after every step the invariants (`SimulationLedger`) are
/// checked, the journal's replay among them.
///
/// What runs for real: `DownloadManagerStateMachine` (item table, host scheduler, name guard, journal
/// buffer), `DownloadAttemptStateMachine`, the journal's format (`DownloadJournal`) and its recovery
/// (`JournalRecovery`), checksums. What is mirrored: the executors (`SimulatedManager` for
/// `DownloadManager`'s I/O and `perform`, `SimulatedRun` for `Download`'s), the file system
/// (`SimulatedDisk`) and the server and transport (`SimulatedServer`).
struct DownloadManagerSimulation {
    typealias ItemID = DownloadManager.ItemID

    struct Violation: Error, CustomStringConvertible {
        var seed: UInt64
        var invariant: String
        var replay: [String]

        /// `JOBKIT_SIMULATION_REPLAY_LINES`: how many of the last moves a violation shows (40).
        static let replayLines =
            ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_REPLAY_LINES"].flatMap { Int($0) } ?? 40

        var description: String {
            "schedule \(seed) broke: \(invariant)\nreplay (JOBKIT_SIMULATION_SEED=\(seed) JOBKIT_SIMULATION_SCHEDULES=1):\n"
                + replay.suffix(Self.replayLines).joined(separator: "\n")
        }
    }

    let seed: UInt64
    private var random: SimulationRandom
    private var disk = SimulatedDisk()
    private var server = SimulatedServer()
    private var manager: SimulatedManager?
    private var ledger = SimulationLedger()
    private var log: [String] = []
    /// Kills, power losses included.
    private(set) var kills = 0
    private(set) var powerLosses = 0
    private var limit = 2
    private let perHost: Int?
    private let durability: Durability
    private let urls: [URL]
    /// Managers closed while their runs were still going: the runs end later, with no lock held.
    private var closed: [SimulatedManager] = []
    /// An invariant a move saw broken, for the next check.
    private var broken: String?

    /// `JOBKIT_SIMULATION_ZERO_FILL=1`: a power loss may read a file's unsynced bytes as zeros (ext4's
    /// `data=writeback`), not only lose them.
    static let zeroFill = ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_ZERO_FILL"] == "1"

    init(seed: UInt64) {
        self.seed = seed
        random = SimulationRandom(seed: seed)
        perHost = random.chance(30) ? 1 : nil
        durability = random.chance(50) ? .system : .process
        urls = (0..<random.int(1...4)).map { URL(string: "http://h\($0 % 2).example/f\($0).bin")! }
        for url in urls {
            server.add(url.absoluteString, length: random.int(0...40), hasETag: random.chance(70))
        }
        if random.chance(30) {
            let name = "notes.txt"
            ledger.plant(name, .file(Array("mine".utf8)))
            disk.plant(name, .file(Array("mine".utf8)))
        }
        disk.sync()
    }

    var injectedFaults: Int { disk.injectedFaults }

    // MARK: Running

    mutating func run(steps: Int) throws(Violation) {
        try open()
        for _ in 0..<steps {
            try step()
        }
        try settle()
    }

    private mutating func note(_ line: String) { log.append(line) }

    private mutating func open() throws(Violation) {
        let faultsBefore = disk.injectedFaults
        do {
            manager = try SimulatedManager(disk: &disk, limit: limit, perHost: perHost, durability: durability)
            note("open (\(durability))")
        } catch {
            // Only a failing disk may keep a manager from opening its folder; the next step tries again.
            guard disk.injectedFaults > faultsBefore else {
                throw violation("a manager could not open its folder: \(error)")
            }
            note("open refused: \(error)")
            return
        }
        try checkRestored()
    }

    private mutating func step() throws(Violation) {
        guard manager != nil else { return try open() }
        let runs = manager!.activeRuns
        let roll = random.int(0...99)
        if !closed.isEmpty, roll < 8 {
            let index = random.int(0...closed.count - 1)
            if let generation = closed[index].activeRuns.first {
                closed[index].step(generation, disk: &disk, server: server, random: &random)
                note("  (a closed manager's run \(generation) steps)")
            } else {
                closed.remove(at: index)
            }
        } else if !runs.isEmpty, roll < 55 {
            let generation = random.pick(runs)
            manager!.step(generation, disk: &disk, server: server, random: &random)
            log += manager!.log
            manager!.log = []
        } else if roll < 70 {
            control()
        } else if roll < 75 {
            if manager!.retryOwed {
                note("retry the journal")
                manager!.retryJournal(disk: &disk)
            } else if manager!.syncOwed {
                note("sync the journal")
                manager!.syncJournal(disk: &disk)
            } else if random.chance(30) {
                note("the kernel writes back")
                disk.sync()
            }
        } else if roll < 80 {
            fault()
        } else if roll < 83 {
            let url = random.pick(urls)
            // Mostly edited in place, at the same length: only a validator tells the versions apart.
            let length = server.resources[url.absoluteString].map { random.chance(70) ? $0.length : random.int(0...40) }
            server.change(url.absoluteString, length: length ?? 0)
            note("server: \(url.lastPathComponent) changes")
        } else if roll < 85 {
            let url = random.pick(urls)
            server.toggleRedirect(url.absoluteString, random: &random)
            note("server: \(url.lastPathComponent) redirects to its mirror, or stops")
        } else if roll < 88 {
            appear()
        } else if roll < 89 {
            edit()
        } else if roll < 92 {
            return try crash()
        } else {
            control()
        }
        try check()
    }

    /// The process dies (`kill -9`: what was written stays) or the power goes (what was not synced
    /// may be lost); closed managers' runs die with it. Before the next manager opens, what a kill mid
    /// step leaves may be there (a `.part.meta.tmp`), and a user may plant a journal record.
    private mutating func crash() throws(Violation) {
        kills += 1
        if random.chance(35) {
            powerLosses += 1
            ledger.added(manager!.doubtfulAdds)
            disk.losePower(&random, zeroFill: Self.zeroFill)
            note("power loss")
            ledger.lostPower(disk: disk, durability: durability)
        } else {
            note("kill -9")
            ledger.killed(journal: disk.journal)
            if let run = manager!.activeRuns.first, random.chance(30), let name = manager!.runs[run]?.start.name {
                disk.plant(PartNames(for: name).metadataTemporary, .file(Array("{\"url".utf8)))
                note("  (killed writing \(name)'s metadata)")
            }
        }
        if random.chance(5), !disk.journal.isEmpty { plantRecord() }
        disk.processDied()
        closed = []
        manager = nil
        try open()
    }

    /// A record planted in the journal, naming a file outside the folder or a URL of another scheme.
    private mutating func plantRecord() {
        var record = DownloadJournal.Record(op: .add, id: UInt64(900 + random.int(0...9)))
        if random.chance(50) {
            record.url = "http://h0.example/x"
            record.name = random.pick(["../x", "a/b", ".", "..", ".jobkit-downloads.journal"])
        } else {
            record.url = random.pick(["file:///etc/passwd", "ftp://h0.example/x", "not a url"])
            record.name = "x.bin"
        }
        // On a line of its own, also after a torn last line.
        let newline = disk.journal.last == UInt8(ascii: "\n") ? Data() : Data("\n".utf8)
        try? disk.appendJournal(newline + DownloadJournal.encode([record]))
        note("user: a record for \(record.name!) from \(record.url!) is planted in the journal")
    }

    /// Lets every run end with no more faults or changes, then checks that the schedule ended.
    private mutating func settle() throws(Violation) {
        disk.faults = []
        disk.failingSyncs = 0
        if manager == nil { try open() }
        guard manager != nil else { throw violation("no manager opens the folder") }
        for _ in 0..<20_000 {
            if manager!.retryOwed {
                note("retry the journal")
                manager!.retryJournal(disk: &disk)
            }
            if manager!.syncOwed { manager!.syncJournal(disk: &disk) }
            let runs = manager!.activeRuns
            guard !runs.isEmpty else { break }
            manager!.step(random.pick(runs), disk: &disk, server: server, random: &random)
            log += manager!.log
            manager!.log = []
            try check()
        }
        guard manager!.activeRuns.isEmpty else { throw violation("runs never ended") }
        for index in closed.indices {
            while let generation = closed[index].activeRuns.first {
                closed[index].step(generation, disk: &disk, server: server, random: &random)
                try check()
            }
        }
        if !manager!.isClosed, manager!.machine.activeCount > 0 {
            throw violation("items still active with no run: \(manager!.machine.activeCount)")
        }
        try checkLeftovers()
    }

    /// Once every run ended and the journal is written: every `.part` is an item's that may resume it.
    private func checkLeftovers() throws(Violation) {
        guard let manager, !manager.isClosed, !manager.retryOwed else { return }
        let machine = manager.machine
        let owners = Dictionary(machine.ids.map { (machine.item($0, now: 0).name, $0) }) { first, _ in first }
        for name in disk.entries.keys where name.hasSuffix(".part") && !ledger.isForeign(name) {
            let owner = owners[String(name.dropLast(5))].map { machine.item($0, now: 0) }
            switch owner?.state {
            case nil: throw violation("\(name) is left with no item")
            case .cancelled?, .completed?: throw violation("\(name) is left beside a \(owner!.state.name) item")
            case .failed(let failure)? where failure.kind == .checksumMismatch:
                throw violation("\(name) is left after a checksum mismatch")
            default: break
            }
        }
    }

    // MARK: The world's moves

    private mutating func control() {
        guard manager != nil else { return }
        let ids = manager!.machine.ids
        let id = ids.isEmpty ? nil : random.pick(ids)
        switch random.int(0...11) {
        case 0, 1, 2:
            let url = random.pick(urls)
            let name =
                random.chance(85)
                ? url.lastPathComponent : random.pick(["../x", ".jobkit-downloads.journal", "notes.txt", "f0.bin"])
            do {
                // A checksum of the current version, sometimes: a later version fails it.
                let current = server.resources[url.absoluteString].map {
                    SimulatedServer.content(url.absoluteString, version: $0.version, length: $0.length)
                }
                let checksum = random.chance(25) ? current.map { Checksum.sha256(of: $0) } : nil
                let added = try manager!.add(
                    [DownloadManager.Request(url: url, name: name, checksum: checksum)], disk: &disk)
                ledger.added(added)
                note("add \(name)\(checksum == nil ? "" : " with a checksum") -> \(added.map(\.rawValue))")
            } catch {
                note("add \(name) refused: \(error)")
            }
        case 3 where id != nil:
            run("suspend \(id!.rawValue)") { machine throws(DownloadManagerError) in try machine.suspend(id!, now: 0) }
        case 4 where id != nil:
            run("resume \(id!.rawValue)") { machine throws(DownloadManagerError) in try machine.resume(id!, now: 0) }
        case 5 where id != nil:
            run("cancel \(id!.rawValue)") { machine throws(DownloadManagerError) in try machine.cancel(id!, now: 0) }
        case 6 where id != nil:
            let item = manager!.machine.item(id!, now: 0)
            let name = item.name
            // `DownloadManager.mayDeleteFile`: a completed file changed since is the user's.
            let changed = item.state == .completed && disk.facts(name) != .file(size: item.progress.expected ?? -1)
            let deleting = random.chance(50) && !changed
            let failure = run("remove \(id!.rawValue) deletingFile: \(deleting)") {
                machine throws(DownloadManagerError) in
                try machine.remove(id!, deletingFile: deleting, now: 0)
            }
            if failure != .closed { ledger.removing(id!, name: name, deletingFile: deleting) }
        case 7:
            limit = random.int(1...3)
            note("setMaxConcurrent(\(limit))")
            manager!.setLimit(limit, disk: &disk)
        case 8:
            note(random.chance(50) ? "suspendAll" : "resumeAll")
            let suspending = log.last == "suspendAll"
            manager!.all(disk: &disk) { machine, id throws(DownloadManagerError) in
                suspending ? try machine.suspend(id, now: 0) : try machine.resume(id, now: 0)
            }
        case 10 where id != nil:
            // A refreshed (signed) URL of the same file: the `.part` may resume from it, with its validator.
            let base = SimulatedServer.resource(manager!.machine.item(id!, now: 0).url.absoluteString)
            let fresh = URL(string: "\(base)?sig=\(random.int(1...3))")!
            run("replaceURL \(id!.rawValue) \(fresh.absoluteString)") { machine throws(DownloadManagerError) in
                try machine.replaceURL(id!, with: fresh, now: 0)
            }
        case 9:
            if random.chance(30) {
                // A user quitting: everything cancelled, then closed, while the runs stop.
                note("cancelAll")
                manager!.all(disk: &disk) { machine, id throws(DownloadManagerError) in try machine.cancel(id, now: 0) }
            }
            note("close")
            manager!.close(disk: &disk)
            log += manager!.log
            // Its runs end after `close()` returns, maybe after a new manager has opened the folder.
            ledger.killed(journal: disk.journal)
            if manager!.closedCleanly {
                do {
                    try ledger.checkLeftParts(disk: disk, manager: manager!)
                } catch {
                    broken = error.invariant
                }
            }
            closed.append(manager!)
            manager = nil
        default:
            break
        }
    }

    /// Runs a control on the manager; returns the journal's failure, nil when it was written.
    @discardableResult
    private mutating func run(
        _ what: String,
        _ transition: (inout SimulatedManager.Machine) throws(DownloadManagerError) -> SimulatedManager.Machine.Actions
    ) -> DownloadManagerError? {
        note(what)
        do {
            defer { log += manager!.log; manager!.log = [] }
            return try manager!.control(disk: &disk, transition)
        } catch {
            note("  refused: \(error)")
            return .closed
        }
    }

    private mutating func fault() {
        if random.chance(20) {
            disk.failingSyncs += 1
            return note("disk: next fsync fails EIO")
        }
        let fault = random.pick([SimulatedDisk.Fault.noSpace, .ioError, .noPermission])
        disk.faults.append(fault)
        note("disk: next write fails \(fault)")
    }

    /// A file or folder appears under an item's name (or its `.part`'s) from outside the manager.
    private mutating func appear() {
        let url = random.pick(urls)
        let name = random.chance(70) ? url.lastPathComponent : PartNames(for: url.lastPathComponent).part
        guard disk.facts(name) == .missing else { return }
        let entry: SimulatedDisk.Entry = random.chance(70) ? .file(Array("user".utf8)) : .directory
        disk.plant(name, entry)
        ledger.plant(name, entry)
        note("user: \(name) appears (\(entry == .directory ? "a folder" : "a file"))")
    }

    // MARK: Invariants

    private func violation(_ invariant: String) -> Violation {
        Violation(seed: seed, invariant: invariant, replay: log)
    }

    private mutating func check() throws(Violation) {
        if let broken { throw violation(broken) }
        do {
            try ledger.check(disk: disk, server: server, manager: manager, closed: closed)
        } catch {
            throw violation(error.invariant)
        }
    }

    /// After a restart: what the ledger checks of a restore, and after every step.
    private mutating func checkRestored() throws(Violation) {
        note("  restored \(manager!.machine.ids.map(\.rawValue))")
        do {
            try ledger.checkRestored(disk: disk, manager: manager!)
        } catch {
            throw violation(error.invariant)
        }
        try check()
    }

    /// The user edits a completed file: it is theirs now.
    private mutating func edit() {
        guard let manager,
            let id = manager.machine.ids.first(where: { manager.machine.item($0, now: 0).state == .completed })
        else { return }
        let name = manager.machine.item(id, now: 0).name
        if ledger.edit(name, disk: &disk) { note("user: edits \(name)") }
    }
}
