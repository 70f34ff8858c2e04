import Foundation
import JobKit

@testable import JobKitNetworking

/// One schedule of the simulation: a seed drives the server, the disk, the controls, kills and the
/// order of every callback; after every step the invariants are checked.
struct DownloadManagerSimulation {
    typealias ItemID = DownloadManager.ItemID

    struct Violation: Error, CustomStringConvertible {
        var seed: UInt64
        var invariant: String
        var replay: [String]

        var description: String {
            "schedule \(seed) broke: \(invariant)\nreplay (JOBKIT_SIMULATION_SEED=\(seed) JOBKIT_SIMULATION_SCHEDULES=1):\n"
                + replay.suffix(40).joined(separator: "\n")
        }
    }

    let seed: UInt64
    private var random: SimulationRandom
    private var disk = SimulatedDisk()
    private var server = SimulatedServer()
    private var manager: SimulatedManager?
    private var log: [String] = []
    private(set) var kills = 0
    private var limit = 2
    private let perHost: Int?

    /// The files no item may touch: planted by the user, or appearing under a name mid-run.
    private var foreign: [String: SimulatedDisk.Entry] = [:]
    /// Completed files, by name: they never change, until removed with their item's `deletingFile`.
    private var completed: [String: [UInt8]] = [:]
    /// Items whose removal the journal recorded: they never come back.
    private var removed: Set<ItemID> = []
    /// Items removed whose record may not be written yet: a kill before it is may bring them back.
    private var removing: Set<ItemID> = []
    private let urls: [URL]
    /// Managers closed while their runs were still going: the runs end later, with no lock held.
    private var closed: [SimulatedManager] = []

    init(seed: UInt64) {
        self.seed = seed
        random = SimulationRandom(seed: seed)
        perHost = random.chance(30) ? 1 : nil
        urls = (0..<random.int(1...4)).map { URL(string: "http://h\($0 % 2).example/f\($0).bin")! }
        for url in urls {
            server.add(url.absoluteString, length: random.int(0...40), hasETag: random.chance(70))
        }
        if random.chance(30) {
            let name = "notes.txt"
            foreign[name] = .file(Array("mine".utf8))
            disk.plant(name, foreign[name]!)
        }
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
            manager = try SimulatedManager(disk: &disk, limit: limit, perHost: perHost)
            note("open")
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
            }
        } else if roll < 80 {
            fault()
        } else if roll < 85 {
            let url = random.pick(urls)
            // Mostly edited in place, at the same length: only a validator tells the versions apart.
            let length = server.resources[url.absoluteString].map { random.chance(70) ? $0.length : random.int(0...40) }
            server.change(url.absoluteString, length: length ?? 0)
            note("server: \(url.lastPathComponent) changes")
        } else if roll < 88 {
            appear()
        } else if roll < 92 {
            note("kill -9")
            kills += 1
            settleRemovals()
            manager = nil
            return try open()
        } else {
            control()
        }
        try check()
    }

    /// Lets every run end with no more faults or changes, then checks that the schedule ended.
    private mutating func settle() throws(Violation) {
        disk.faults = []
        if manager == nil { try open() }
        guard manager != nil else { throw violation("no manager opens the folder") }
        for _ in 0..<20_000 {
            if manager!.retryOwed {
                note("retry the journal")
                manager!.retryJournal(disk: &disk)
            }
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
        try checkJournalReplays()
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
                let added = try manager!.add([DownloadManager.Request(url: url, name: name)], disk: &disk)
                note("add \(name) -> \(added.map(\.rawValue))")
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
            let deleting = random.chance(50)
            let name = manager!.machine.item(id!, now: 0).name
            let failure = run("remove \(id!.rawValue) deletingFile: \(deleting)") {
                machine throws(DownloadManagerError) in
                try machine.remove(id!, deletingFile: deleting, now: 0)
            }
            if failure != .closed {
                removing.insert(id!)
                if deleting { completed[name] = nil }  // removed once the journal says so
            }
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
            note("close")
            manager!.close(disk: &disk)
            // Its runs end after `close()` returns, maybe after a new manager has opened the folder.
            settleRemovals()
            closed.append(manager!)
            manager = nil
        default:
            break
        }
    }

    /// The removals the journal on disk has recorded never come back; the others may.
    private mutating func settleRemovals() {
        let recorded = Set(((try? DownloadJournal.parse(disk.journal))?.entries ?? []).map(\.id))
        removed.formUnion(removing.filter { !recorded.contains($0.rawValue) })
        removing = []
    }

    /// Runs a control on the manager; returns the journal's failure, nil when it was written.
    @discardableResult
    private mutating func run(
        _ what: String,
        _ transition: (inout SimulatedManager.Machine) throws(DownloadManagerError) -> SimulatedManager.Machine.Actions
    ) -> DownloadManagerError? {
        note(what)
        do {
            return try manager!.control(disk: &disk, transition)
        } catch {
            note("  refused: \(error)")
            return .closed
        }
    }

    private mutating func fault() {
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
        foreign[name] = entry
        note("user: \(name) appears (\(entry == .directory ? "a folder" : "a file"))")
    }

    // MARK: Invariants

    private func violation(_ invariant: String) -> Violation {
        Violation(seed: seed, invariant: invariant, replay: log)
    }

    private mutating func check() throws(Violation) {
        for (name, entry) in foreign where disk.entries[name] != entry && !name.hasSuffix(".part") {
            throw violation("a file the manager does not own was touched: \(name)")
        }
        for (name, entry) in foreign where name.hasSuffix(".part") && disk.entries[name] != entry {
            // A planted `.part` may be used (it is under the manager's own name), but never a folder.
            if entry == .directory { throw violation("a planted folder \(name) was changed") }
        }
        for (name, bytes) in completed where disk.bytes(name) != bytes {
            throw violation("the completed file \(name) was lost or changed")
        }
        for closedManager in closed {
            if let unlink = closedManager.unjustifiedUnlinks.first { throw violation("journal first: \(unlink)") }
        }
        guard let manager else { return }
        if let unlink = manager.unjustifiedUnlinks.first { throw violation("journal first: \(unlink)") }
        let machine = manager.machine
        for id in machine.ids {
            let item = machine.item(id, now: 0)
            if removed.contains(id) { throw violation("the removed item \(id.rawValue) is back") }
            if item.progress.received < 0 { throw violation("negative bytes for \(item.name)") }
            if case .completed = item.state, completed[item.name] == nil {
                // Newly completed: it must be one whole version of its resource, never a splice.
                guard let bytes = disk.bytes(item.name) else {
                    throw violation("\(item.name) is completed with no file")
                }
                guard server.versions[SimulatedServer.resource(item.url.absoluteString)]?.contains(bytes) == true else {
                    throw violation("\(item.name) is completed with bytes of no single version (a splice)")
                }
                if foreign[item.name] == nil { completed[item.name] = bytes }
            }
        }
        let totals = machine.summary(now: 0).totals
        if totals.received < 0 || totals.expected < 0 || totals.received > totals.expected
            || totals.receivedOfUnknownLength < 0 || !(0...1).contains(totals.fraction ?? 0)
        {
            throw violation("totals out of bounds: \(totals)")
        }
    }

    /// After a restart: no removed item is back, and every completed file is still completed.
    private mutating func checkRestored() throws(Violation) {
        note("  restored \(manager!.machine.ids.map(\.rawValue))")
        try check()
    }

    /// The journal on disk, read back, says what the manager knows.
    private mutating func checkJournalReplays() throws(Violation) {
        guard let manager, !manager.isClosed else { return }
        var probe = manager.machine
        guard probe.takeJournal() == nil else { return }  // records still owed (a write failed)
        let read: DownloadJournal.Contents
        do {
            read = try DownloadJournal.parse(disk.journal)
        } catch {
            throw violation("the journal does not read back: \(error)")
        }
        let known = manager.machine.journalEntries
        guard read.entries.map(\.id) == known.map(\.id) else {
            throw violation("the journal replays to other items: \(read.entries.map(\.id)) vs \(known.map(\.id))")
        }
        for (replayed, entry) in zip(read.entries, known) where replayed.status != entry.status {
            throw violation("the journal replays item \(entry.id) as \(replayed.status), not \(entry.status)")
        }
    }
}
