import Dispatch
import Foundation
import JobKit
import JobKitTesting

@testable import JobKitNetworking

/// One schedule of the real `DownloadManager` under the simulation: the code that ships, on a
/// `MemoryFileSystem`, a `SimulatedTransport` and a `TestScheduler`, every hop of it on one serial
/// queue per simulated process. The seed picks each next move — a transport callback, time moving
/// (retries, deliveries, journal syncs and retries, speed limits), a control, a disk fault, the server
/// changing, a file appearing, a kill or a power loss — and the invariants are checked after every move.
///
/// **Determinism.** The manager's queue, its result queue and its journal's syncs are the process's
/// serial queue, and every move is a block on it that queues the next one: what the manager queues
/// runs between moves, in an order the seed alone decides. A kill suspends the process's queue for
/// good (nothing of it runs again while the schedule goes on) and drops its transfers.
// Safety: every property is used only from the blocks of the live process's serial queue (one at a
// time, each after the one before), and from `run` before the first and after the last.
final class LiveManagerSimulation: @unchecked Sendable {
    typealias ItemID = DownloadManager.ItemID
    typealias Violation = DownloadManagerSimulation.Violation

    /// A process: its queue, its time, its network, its managers.
    final class Process: @unchecked Sendable {
        let queue: DispatchQueue
        let scheduler = TestScheduler()
        let transport = SimulatedTransport()
        var manager: DownloadManager?
        /// Managers closed in this process: their stopped runs still end here.
        var closed: [DownloadManager] = []

        init(number: Int) { queue = DispatchQueue(label: "simulated process \(number)") }
    }

    let seed: UInt64
    private var random: SimulationRandom
    private let disk = MemoryFileSystem()
    private let folder = "/simulated/downloads"
    private var server = SimulatedServer()
    private var process = Process(number: 0)
    /// Killed processes: their queues stay suspended until the schedule ends.
    private var dead: [Process] = []
    private let durability: Durability
    private let perHost: Int?
    private let retries: Bool
    private let urls: [URL]
    private var log: [String] = []
    private(set) var kills = 0
    private(set) var powerLosses = 0
    private(set) var injectedFaults = 0
    private(set) var moves = 0

    // What the schedule must keep.
    /// Files nobody gave the manager: planted, or a completed file the user edited.
    private var foreign: [String: MemoryFault.Planted] = [:]
    /// Completed files, by name: they stay as they are until removed with `deletingFile`.
    private var completed: [String: Data] = [:]
    /// Every id an `add` returned (or may have: one whose sync failed may be written).
    private var added: Set<ItemID> = []
    /// Removed items, by id: once the journal on disk no longer has them, they never come back.
    private var removing: [ItemID: String] = [:]
    private var removed: Set<ItemID> = []
    private var replay = JournalReplay()
    /// The `.part`s last found sound, by item name (most moves change none).
    private var checkedParts: [String: Data] = [:]

    init(seed: UInt64) {
        self.seed = seed
        random = SimulationRandom(seed: seed)
        durability = random.chance(50) ? .system : .process
        perHost = random.chance(30) ? 1 : nil
        retries = random.chance(60)
        urls = (0..<random.int(1...4)).map { URL(string: "http://h\($0 % 2).example/f\($0).bin")! }
        for url in urls {
            server.add(url.absoluteString, length: random.int(0...9000), hasETag: random.chance(70))
        }
    }

    // MARK: Running

    /// Runs `steps` moves, then lets the schedule settle; on the caller's thread, which waits.
    func run(steps: Int) throws(Violation) {
        process.queue.async { [self] in
            open()
            next(steps: steps, settling: 4000)
        }
        done.wait()
        // Nothing more is checked: the dead processes' queues may run what they held, on a dead disk.
        for process in dead {
            process.transport.dropAll()
            process.queue.resume()
        }
        if ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_TRACE"] == "1" {
            print(log.joined(separator: "\n"))
        }
        if let outcome { throw outcome }
    }

    /// One move on the live process's queue, then the next queued behind what the move queued.
    private func next(steps: Int, settling: Int) {
        for request in process.transport.started { note("    \(request)") }
        process.transport.started = []
        do throws(Violation) {
            if steps > 0 {
                try move()
            } else if try !settle() || settling == 0 {
                if settling == 0 { throw violation("the schedule did not settle") }
                try checkSettled()
                done.signal()
                return
            }
            try check()
        } catch {
            outcome = error
            done.signal()
            return
        }
        process.queue.async { [self] in
            next(steps: max(0, steps - 1), settling: steps > 0 ? settling : settling - 1)
        }
    }

    /// Signalled when the schedule ended, with `outcome`.
    private let done = DispatchSemaphore(value: 0)
    private var outcome: Violation?

    private func note(_ line: String) { log.append(line) }

    private func violation(_ invariant: String) -> Violation {
        Violation(seed: seed, invariant: invariant, replay: log)
    }

    private var manager: DownloadManager? { process.manager }

    /// The live manager's state machine, as it is between two blocks.
    private var machine: DownloadManager.Machine? { manager?.state.withLock { $0 } }

    private func open() {
        var configuration = DownloadManager.Configuration(
            maxConcurrent: random.int(1...3), maxPerHost: perHost,
            retry: retries ? .init(attempts: 3, backoff: .constant(.seconds(1))) : .none,
            progressInterval: .milliseconds(100))
        configuration.queue = process.queue
        configuration.scheduler = process.scheduler
        configuration.httpTransport = process.transport
        configuration.fileSystem = disk
        configuration.durability = durability
        configuration.testHooks.partSyncInterval = 1024
        let faults = disk.pendingFaults.count
        do {
            process.manager = try DownloadManager(
                directory: URL(fileURLWithPath: folder), configuration: configuration, resultQueue: process.queue,
                updateHandler: nil)
            note("open (\(durability)): restored \(machine!.ids.map(\.rawValue))")
        } catch {
            note("open refused: \(error)")
            if disk.pendingFaults.count == faults { broken = "a manager could not open its folder: \(error)" }
        }
    }

    /// An invariant an action saw broken, for the next check.
    private var broken: String?

    // MARK: Moves

    private func move() throws(Violation) {
        moves += 1
        guard manager != nil else {
            open()
            return checkRestored()
        }
        let transfers = process.transport.transfers
        switch random.int(0...99) {
        case 0..<50 where !transfers.isEmpty:
            let transfer = random.pick(transfers)
            let what = process.transport.step(transfer, server: server, random: &random)
            note("  \(transfer.request.url!.lastPathComponent): \(what)")
        case 0..<58:
            let delay = Duration.milliseconds(random.pick([0, 50, 100, 1000, 2000]))
            note("time +\(delay)")
            process.scheduler.advance(by: delay)
        case 58..<74:
            control()
        case 74..<78:
            fault()
        case 78..<81:
            let url = random.pick(urls).absoluteString
            let length = server.resources[url].map { random.chance(70) ? $0.length : random.int(0...9000) } ?? 0
            server.change(url, length: length)
            note("server: \(url) changes")
        case 81..<83:
            let url = random.pick(urls)
            server.toggleRedirect(url.absoluteString, random: &random)
            note("server: \(url.lastPathComponent) redirects to its mirror, or stops")
        case 83..<86:
            appear()
        case 86..<87:
            edit()
        case 87..<89:
            note("the kernel writes back")
            disk.writeBack()
        case 89..<92:
            crash()
        default:
            note("(the queue runs)")
        }
    }

    private func control() {
        guard let manager, let machine else { return }
        let ids = machine.ids
        let id = ids.isEmpty ? nil : random.pick(ids)
        do throws(DownloadManagerError) {
            switch random.int(0...11) {
            case 0, 1, 2, 3:
                let url = random.pick(urls)
                let name = random.chance(90) ? url.lastPathComponent : random.pick(["../x", "notes.txt", "f0.bin"])
                // A checksum of the current version, sometimes: a later version fails it.
                let checksum =
                    random.chance(25)
                    ? server.resources[url.absoluteString].map {
                        Checksum.sha256(
                            of: SimulatedServer.content(url.absoluteString, version: $0.version, length: $0.length))
                    } : nil
                note("add \(name)\(checksum == nil ? "" : " with a checksum")")
                // A failed add may still be in the journal (its sync failed after the write).
                let faults = disk.pendingFaults.count
                do {
                    let id = try manager.add(url, name: name, checksum: checksum)
                    added.insert(id)
                    removed.remove(id)
                    note("  -> \(id.rawValue)")
                } catch {
                    if disk.pendingFaults.count != faults { added.insert(ItemID(rawValue: machine.items.nextID)) }
                    throw error
                }
            case 4 where id != nil:
                note("suspend \(id!.rawValue)")
                try manager.suspend(id!)
            case 5 where id != nil:
                note("resume \(id!.rawValue)")
                try manager.resume(id!)
            case 6 where id != nil:
                note("cancel \(id!.rawValue)")
                try manager.cancel(id!)
            case 7 where id != nil:
                let deleting = random.chance(50)
                let name = machine.item(id!, now: 0).name
                note("remove \(id!.rawValue) deletingFile: \(deleting)")
                removing[id!] = name
                // Its file goes, or stays as the user's.
                if let bytes = completed.removeValue(forKey: name), !deleting || !manager.mayDeleteFile(of: id!) {
                    foreign[name] = .file(bytes)
                }
                try manager.remove(id!, deletingFile: deleting)
            case 8:
                let limit = random.int(1...3)
                note("setMaxConcurrent(\(limit))")
                manager.setMaxConcurrent(limit)
            case 9:
                let which = random.int(0...2)
                note(["suspendAll", "resumeAll", "cancelAll"][which])
                [manager.suspendAll, manager.resumeAll, manager.cancelAll][which]()
            case 10:
                note("close")
                manager.close()
                process.closed.append(manager)
                process.manager = nil
                noteJournalOnDisk()
            default:
                note("(no control)")
            }
        } catch {
            note("  refused: \(error)")
        }
    }

    private func fault() {
        let names =
            [DownloadJournal.fileName]
            + urls.flatMap { url in
                let name = url.lastPathComponent
                return [name + ".part", name + ".part.meta", name + ".part.meta.tmp"]
            }
        let operation = random.pick([MemoryFault.Operation.write, .sync, .open, .rename, .truncate, .unlink])
        let name = random.pick(names)
        let code = random.pick([ENOSPC, EIO, EACCES])
        disk.fail(operation, name: name, with: code, skipping: random.int(0...2))
        injectedFaults += 1
        note("disk: a coming \(operation) of \(name) fails \(code)")
    }

    /// A file or folder appears under an item's name, or its `.part`'s, from outside the manager.
    private func appear() {
        let name = random.pick(urls).lastPathComponent + (random.chance(70) ? "" : ".part")
        guard disk.facts(of: name, in: folder) == .missing else { return }
        let planted: MemoryFault.Planted = random.chance(70) ? .file(Data("user".utf8)) : .directory
        disk.plant(planted, named: name, in: folder)
        foreign[name] = planted
        note("user: \(name) appears")
    }

    /// The user edits a completed file: it is theirs now.
    private func edit() {
        guard let name = completed.keys.sorted().first, let bytes = completed.removeValue(forKey: name) else { return }
        let edited = bytes + Data("!".utf8)
        disk.plant(.file(edited), named: name, in: folder)
        foreign[name] = .file(edited)
        note("user: edits \(name)")
    }

    /// The process dies (`kill -9`) or the power goes; a new process starts and opens the folder.
    private func crash() {
        kills += 1
        let power = random.chance(35)
        if power {
            powerLosses += 1
            disk.powerLoss()
            note("power loss")
        } else {
            disk.kill()
            note("kill -9")
        }
        process.queue.suspend()
        process.transport.dropAll()
        dead.append(process)
        process = Process(number: dead.count)
        noteJournalOnDisk(afterPowerLoss: power)
        if power, durability == .process {
            // Not synced: a completed file may be gone, or short.
            completed = completed.filter { disk.contents(of: $0.key, in: folder) == $0.value }
        }
        if power {
            // What the user planted is durable; a file the manager made and left to the user (its item
            // removed) may not be.
            foreign = foreign.filter { name, planted in
                guard case .file(let data) = planted else { return true }
                return disk.contents(of: name, in: folder) == data
            }
        }
        // The new process opens the folder in the next move, on its own queue: this one is the dead
        // process's, and what the new manager queues would run beside it.
    }

    /// The journal on the disk is the last word: a removal it no longer has an item of is final.
    private func noteJournalOnDisk(afterPowerLoss: Bool = false) {
        let contents = disk.contents(of: DownloadJournal.fileName, in: folder).flatMap {
            try? DownloadJournal.parse($0)
        }
        let recorded = Set((contents?.entries ?? []).map(\.id))
        for (id, _) in removing where !recorded.contains(id.rawValue) { removed.insert(id) }
        removing = [:]
        if afterPowerLoss {
            // A removal the power took back comes back; ids past the journal's next one are given again.
            removed = removed.filter { !recorded.contains($0.rawValue) && $0.rawValue < contents?.nextID ?? 0 }
        }
    }

    // MARK: Settling

    /// One move of the end: no more faults or lies, everything resumed; false once nothing is left
    /// to happen (no transfer, no timer).
    private func settle() throws(Violation) -> Bool {
        if !server.honest {
            server.honest = true
            note("settling")
            disk.clearFaults()
        }
        guard let manager else {
            open()
            checkRestored()
            return true
        }
        let transfers = process.transport.transfers
        if !transfers.isEmpty {
            let transfer = random.pick(transfers)
            let what = process.transport.step(transfer, server: server, random: &random)
            note("  \(transfer.request.url!.lastPathComponent): \(what)")
            return true
        }
        if let delay = process.scheduler.scheduledDelays.first {
            process.scheduler.advance(by: delay)
            return true
        }
        // What failed before the end (or on an answer given before it) is queued again, a few times.
        if resumes < 4, let machine, machine.ids.contains(where: { !isFinal(machine.item($0, now: 0)) }) {
            resumes += 1
            settledTurns = 0
            note("resumeAll")
            manager.resumeAll()
            return true
        }
        // A block queued by the last move may still start something: one more turn of the queue.
        settledTurns += 1
        return settledTurns < 20
    }

    private var resumes = 0
    private var settledTurns = 0

    /// Completed, or failed for a reason an honest server does not change: its checksum (of a
    /// version the server no longer has), something of the user's under its name or its `.part`'s.
    private func isFinal(_ item: DownloadManager.Item) -> Bool {
        switch item.state {
        case .completed: true
        case .failed(let failure):
            failure.kind == .checksumMismatch || foreign[item.name] != nil || foreign[item.name + ".part"] == .directory
                // A file left by a power loss (a removed item's, short): the manager never replaces one.
                || (failure.kind == .fileInTheWay && disk.facts(of: item.name, in: folder) != .missing)
        default: false
        }
    }

    /// Once nothing is left to happen: every item is completed, or failed for a reason of its own.
    private func checkSettled() throws(Violation) {
        guard let machine else { throw violation("no manager at the end") }
        for id in machine.ids where !isFinal(machine.item(id, now: 0)) {
            let item = machine.item(id, now: 0)
            throw violation(
                "\(item.name) ended \(item.state) with an honest server; scheduled: "
                    + "\(process.scheduler.scheduledDelays), transfers: \(process.transport.transfers.count)")
        }
    }

    // MARK: Invariants

    private func check() throws(Violation) {
        if let broken { throw violation(broken) }
        for (name, planted) in foreign where !name.hasSuffix(".part") {
            switch planted {
            case .file(let data) where disk.contents(of: name, in: folder) != data:
                throw violation("a file the manager does not own was touched: \(name)")
            case .directory where disk.facts(of: name, in: folder) != .directory:
                throw violation("a folder the manager does not own was touched: \(name)")
            default: break
            }
        }
        for (name, bytes) in completed where disk.contents(of: name, in: folder) != bytes {
            throw violation("the completed file \(name) was lost or changed")
        }
        guard let machine else { return }
        for id in machine.ids {
            let item = machine.item(id, now: 0)
            if removed.contains(id) { throw violation("the removed item \(id.rawValue) is back") }
            let url = item.url.absoluteString
            if foreign[item.name + ".part"] == nil, let part = disk.contents(of: item.name + ".part", in: folder),
                checkedParts[item.name] != part
            {
                guard server.isPrefixOfVersion(Array(part), of: url) else {
                    throw violation("\(item.name).part (\(part.count) bytes) is not the start of any version of \(url)")
                }
                checkedParts[item.name] = part
            }
            guard case .completed = item.state, completed[item.name] == nil, foreign[item.name] == nil else { continue }
            // Newly completed: one whole version of its resource, never a splice.
            guard let bytes = disk.contents(of: item.name, in: folder) else {
                throw violation("\(item.name) is completed with no file")
            }
            guard server.isVersion(Array(bytes), of: url) else {
                throw violation("\(item.name) is completed with bytes of no single version (a splice)")
            }
            if let checksum = item.checksum, Checksum.digest(checksum.algorithm, of: Array(bytes)) != checksum {
                throw violation("\(item.name) is completed with bytes its checksum refuses")
            }
            completed[item.name] = bytes
        }
        let totals = machine.summary(now: 0).totals
        if totals.received < 0 || totals.expected < 0 || totals.received > totals.expected {
            throw violation("totals out of bounds: \(totals)")
        }
        let journal = disk.contents(of: DownloadJournal.fileName, in: folder) ?? Data()
        if let mismatch = replay.mismatch(machine, journal: journal, facts: { disk.facts(of: $0, in: folder) }) {
            throw violation(
                mismatch + "\njournal:\n" + String(decoding: journal, as: UTF8.self) + "\nlive: "
                    + "\(machine.journalEntries.map { "\($0.id) \($0.name) \($0.status)" })")
        }
    }

    /// After a restart: only items an `add` returned, none removed for good.
    private func checkRestored() {
        guard let machine else { return }
        for id in machine.ids where !added.contains(id) {
            broken = "item \(id.rawValue), never added, is restored"
        }
    }
}
