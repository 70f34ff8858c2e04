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
final class DownloadManagerSimulation: @unchecked Sendable {
    typealias ItemID = DownloadManager.ItemID

    /// An invariant a schedule broke, and the moves that led there.
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

    /// A process: its queue, its time, its network, its managers.
    final class Process: @unchecked Sendable {
        let queue: DispatchQueue
        let scheduler = TestScheduler()
        let transport = SimulatedTransport()
        var manager: DownloadManager?
        /// Managers closed in this process: their stopped runs still end here.
        var closed: [DownloadManager] = []

        /// The records after which its managers compact the journal.
        var compactionThreshold = 1024
        /// Where the tasks of this process's waits and consumers run: its queue.
        let executor: SimulatedExecutor

        init(number: Int) {
            queue = DispatchQueue(label: "simulated process \(number)")
            executor = SimulatedExecutor(queue: queue)
        }

        /// After the schedule, on its queue: its managers closed, its timers run out (they hold the
        /// managers, which hold the scheduler).
        func end() {
            manager?.close()
            scheduler.run()
        }
    }

    let seed: UInt64
    private var random: SimulationRandom
    private let disk = MemoryFileSystem()
    /// The directory the managers open, and the folder their files go to (a subfolder of it, in some
    /// schedules).
    private static let root = "/simulated/downloads"
    private let subfolder: String?
    private let folder: String
    private var server = SimulatedServer()
    private var process = Process(number: 0)
    /// Killed processes: their queues stay suspended until the schedule ends.
    private var dead: [Process] = []
    private let durability: Durability
    private let perHost: Int?
    private let retries: Bool
    private let startsRestored: Bool
    private let overallLimit: Int64?
    private let urls: [URL]
    /// The names a fault may act on: the journal's, and the sidecars of the names the URLs give.
    private let faultable: [String]
    /// `PartNames` of the items' names, made once (every check asks for each item's): `partNames(of:)`.
    private var madePartNames: [String: PartNames] = [:]
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
    /// Removed items: once the journal on disk no longer has them, they never come back.
    private var removing: Set<ItemID> = []
    /// Items whose `.part` the live process threw away at some point (cancelled, or failed by their
    /// checksum): unlinked later (a write that failed left the unlinks owed), it may be after a resume.
    private var discarded: Set<UInt64> = []
    private var removed: Set<ItemID> = []
    private var replay = JournalReplay()
    /// The journals read so far (every check reads it; most moves append a line or nothing).
    private var journals = ParsedJournal()
    /// The journals a power loss would leave, read so far.
    private var durableJournals = ParsedJournal()
    /// Names an item was added under with `replacesExistingFile`: what is under them may be replaced.
    private var replacing: Set<String> = []
    /// Names whose item was removed: a file it left there is nobody's now.
    private var leftFiles: Set<String> = []
    /// A power loss with `.process` durability happened: a completed file may have been cut short.
    private var unsyncedLost = false
    /// `.part`s a power loss left with no record of their item, and files whose unlink was made to fail.
    private var orphaned: Set<String> = []
    /// The items as the updates so far tell them (the events replayed), by id.
    private var replayed: [ItemID: DownloadManager.State] = [:]
    /// Inside `close()` or a recovery: with `.system` durability, what they unlink is announced by
    /// records on the disk itself (synced), not only written (`checkUnlink`).
    private var unlinksNeedSyncedRecords = false
    /// The runs of each name the manager started whose download has not ended (`runBoundary`).
    private var runsOfNames: [String: Set<UInt64>] = [:]
    /// The inode of each item's `.part` as its last `finishing` was recorded (`afterFinishing`): a
    /// `.part` under that name later is another's, once the finished one took the name.
    private var finishingParts: [UInt64: Int] = [:]
    /// Managers opened so far: the updates of the last one are replayed (a closed one's last come later).
    private var opened = 0
    /// The stamps (`MemoryFileSystem.stamp`) of the `.part`s last found sound, by item name, and of
    /// the completed files last found whole: most moves change neither, and their bytes are not read.
    private var checkedParts: [String: MemoryDisk.Stamp] = [:]
    private var checkedCompleted: [String: MemoryDisk.Stamp] = [:]
    /// The lines of the journal, as of its stamp.
    private var journalLines: (stamp: MemoryDisk.Stamp?, count: Int)?
    /// Every name a request gave, and the item name each of their sidecars (`PartNames`) is for.
    private var requestedNames: Set<String> = []
    private var sidecarOwners: [String: String] = [:]
    /// The `.part.meta` files last decoded, by name.
    private var decodedMetadata: [String: (data: Data, metadata: PartMetadata?)] = [:]

    init(seed: UInt64) {
        self.seed = seed
        random = SimulationRandom(seed: seed)
        durability = random.chance(50) ? .system : .process
        perHost = random.chance(30) ? 1 : nil
        retries = random.chance(60)
        subfolder = random.chance(20) ? "sub/dir" : nil
        folder = subfolder.map { Self.root + "/" + $0 } ?? Self.root
        startsRestored = random.chance(80)
        overallLimit = random.chance(15) ? 3000 : nil
        urls = (0..<random.int(1...4)).map { URL(string: "http://h\($0 % 2).example/f\($0).bin")! }
        faultable =
            [DownloadJournal.fileName, DownloadJournal.fileName + ".tmp"]
            + urls.flatMap { url in PartNames(for: url.lastPathComponent).all + PartNames(for: Self.longName(url)).all }
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
        // A deadline, never the way a schedule ends: a block of the manager that never returns
        // would hang the test run.
        guard done.wait(timeout: .now() + 120) == .success else {
            throw violation("the schedule hung (its queue ran no move for two minutes)")
        }
        // Nothing more is checked. The managers are closed, so that their stopped runs end and let go
        // of them; the dead processes' queues run what they held, on a dead disk.
        process.queue.sync { process.end() }
        for process in dead {
            process.transport.dropAll()
            process.queue.resume()
            process.queue.async { process.end() }
        }
        if Self.traces {
            print(log.joined(separator: "\n"))
        }
        if let outcome { throw outcome }
    }

    /// One move on the live process's queue, then the next queued behind what the move queued.
    private func next(steps: Int, settling: Int) {
        for request in process.transport.started { note("    \(request)") }
        process.transport.started = []
        do throws(Violation) {
            // A crash planned for what the last move queued may have come in it: the schedule goes on
            // on the new process's queue (the new manager queues its work there, and must not run
            // beside this block of the dead one's).
            if tookPlannedCrash() {
                process.queue.async { [self] in next(steps: steps, settling: settling) }
                return
            }
            if steps > 0 {
                noteDiscards()
                try move()
                tookPlannedCrash()
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

    /// `JOBKIT_SIMULATION_TRACE=1`: every move of every schedule is printed, the updates among them.
    static let traces = ProcessInfo.processInfo.environment["JOBKIT_SIMULATION_TRACE"] == "1"

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
        // Files of a few kilobytes split over several connections, their maps written along the way.
        configuration.testHooks.segmentSize = 2048
        // Half of the processes refresh a refused URL (401, 403, 410): once, with a signed URL of the
        // same file; a URL refreshed already is given up on. On this process's queue.
        configuration.testHooks.taskExecutor = process.executor
        if random.chance(50) {
            configuration.urlRefresher = { item, _ in
                let url = item.url.absoluteString
                return url.contains("?sig=") ? nil : URL(string: SimulatedServer.resource(url) + "?sig=9")
            }
        }
        // Half of the processes compact their journal after a few records (1,024 is never reached).
        process.compactionThreshold = random.chance(50) ? random.int(1...6) : 1024
        configuration.testHooks.journalCompactionThreshold = process.compactionThreshold
        configuration.subfolder = subfolder
        configuration.startsRestoredItems = startsRestored
        configuration.maxBytesPerSecond = overallLimit
        // Journal first: nothing is unlinked that the journal on the disk still needs.
        configuration.testHooks.beforeUnlink = { [weak self] names in self?.checkUnlink(names) }
        // Journal first: no `.part` takes its name before its `finishing` record is on the disk.
        configuration.testHooks.afterFinishing = { [weak self] id in self?.checkFinishing(id) }
        let faults = disk.pendingFaults.count
        do {
            replayed = [:]
            runsOfNames = [:]
            opened += 1
            let number = opened
            // One run of a name at a time: a run starts once every earlier one of its name has ended.
            configuration.testHooks.runBoundary = { [weak self] name, generation, started in
                guard let self, number == opened else { return }
                if started, let running = runsOfNames[name], !running.isEmpty {
                    broken = "run \(generation) of \(name) starts while run \(running.sorted()) of it has not ended"
                }
                if started {
                    runsOfNames[name, default: []].insert(generation)
                } else {
                    runsOfNames[name]?.remove(generation)
                }
            }
            unlinksNeedSyncedRecords = true
            defer { unlinksNeedSyncedRecords = false }
            process.manager = try DownloadManager(
                directory: URL(fileURLWithPath: Self.root), configuration: configuration, resultQueue: process.queue,
                updateHandler: { [weak self] update in
                    guard let self, number == opened else { return }
                    if Self.traces { note("    update: \(update.events.count) events -> \(update.items.map(\.state))") }
                    if let broken = Self.replay(update, onto: &replayed) { self.broken = broken }
                })
            if random.chance(20) { consumeUpdates(of: process.manager!) }
            note(
                "open (\(durability)\(subfolder == nil ? "" : ", subfolder")\(startsRestored ? "" : ", held")): "
                    + "restored \(machine!.ids.map(\.rawValue))")
        } catch {
            note("open refused: \(error)")
            if disk.pendingFaults.count == faults, !disk.hasCrashed {
                broken = "a manager could not open its folder: \(error)"
            }
        }
    }

    /// An invariant an action saw broken, for the next check.
    private var broken: String?

    // MARK: Moves

    private func move() throws(Violation) {
        moves += 1
        guard manager != nil else {
            open()
            tookPlannedCrash()
            return checkRestored()
        }
        let transfers = process.transport.ready
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
        case 92..<93:
            crashWithin()
        default:
            note("(the queue runs)")
        }
    }

    private func control() {
        guard let manager, let machine else { return }
        let ids = machine.ids
        let id = ids.isEmpty ? nil : random.pick(ids)
        let choice = random.int(0...11)
        // A call's result is judged: no crash lands inside it. But for a cancel's or a removal's: the
        // journal on the disk judges those after a crash (`noteJournalOnDisk`), so a crash planned for
        // what comes next may land between their records, a compaction and their unlinks.
        if ![6, 7, 11].contains(choice) { disk.cancelCrash() }
        let pendingFaults = disk.pendingFaults.count
        do throws(DownloadManagerError) {
            switch choice {
            case 0, 1, 2, 3:
                let requests = (0..<(random.chance(30) ? 2 : 1)).map { _ in request() }
                note("add \(requests.map(describe).joined(separator: ", "))")
                // A failed add may still be in the journal (its sync failed after the write).
                let faults = disk.pendingFaults.count
                do {
                    let ids = try manager.add(contentsOf: requests)
                    added.formUnion(ids)
                    removed.subtract(ids)
                    for request in requests where request.replacesExistingFile {
                        // A completed item of the name may be downloaded again (`downloadAgain`).
                        replacing.insert(request.name!)
                        completed[request.name!] = nil
                    }
                    note("  -> \(ids.map(\.rawValue))")
                } catch {
                    if disk.pendingFaults.count != faults {
                        let next = machine.items.nextID
                        added.formUnion((next..<next + UInt64(requests.count)).map { ItemID(rawValue: $0) })
                    }
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
                discarded.insert(id!.rawValue)
                try manager.cancel(id!)
            case 7 where id != nil:
                let deleting = random.chance(50)
                let name = machine.item(id!, now: 0).name
                note("remove \(id!.rawValue) deletingFile: \(deleting)")
                removing.insert(id!)
                leftFiles.insert(name)
                // Its file may go (or stay: what the name then holds is nobody's to check).
                completed[name] = nil
                try manager.remove(id!, deletingFile: deleting)
            case 8:
                let limit = random.int(1...3)
                let speed = random.chance(50) ? Int64(random.int(500...4000)) : nil
                switch random.int(0...2) {
                case 0:
                    note("setMaxConcurrent(\(limit))")
                    manager.setMaxConcurrent(limit)
                case 1:
                    note("setMaxBytesPerSecond(\(speed.map(String.init) ?? "nil"))")
                    manager.setMaxBytesPerSecond(speed)
                default:
                    guard let id else { break }
                    note("setMaxBytesPerSecond(\(speed.map(String.init) ?? "nil"), for: \(id.rawValue))")
                    try manager.setMaxBytesPerSecond(speed, for: id)
                }
            case 9 where random.chance(25):
                // Waits, on this process's queue, for the queue to drain: every item it reports as ended is.
                note("waitUntilFinished")
                Task(executorPreference: process.executor) { [weak self, weak manager] in
                    guard let summary = await manager?.waitUntilFinished() else { return }
                    self?.checkFinished(summary, of: manager)
                }
            case 9:
                let which = random.int(0...2)
                note(["suspendAll", "resumeAll", "cancelAll"][which])
                // Cancelled, as by `cancel`: a record announces the unlinks of their `.part`s.
                if which == 2 {
                    discarded.formUnion(ids.filter { machine.item($0, now: 0).state != .completed }.map(\.rawValue))
                }
                [manager.suspendAll, manager.resumeAll, manager.cancelAll][which]()
            case 10 where id != nil && random.chance(15):
                // A completed item fetched again (`--allow-overwrite`), mostly from another resource: its
                // file and record stay until the new file takes the name. One not completed takes the
                // URL as `replaceURL` gives it: of the same file (its `.part` may resume from it).
                let item = machine.item(id!, now: 0)
                let url =
                    item.state == .completed
                    ? random.pick(urls) : URL(string: "\(SimulatedServer.resource(item.url.absoluteString))?v=2")!
                note("downloadAgain \(id!.rawValue) from \(url.absoluteString)")
                completed[item.name] = nil
                replacing.insert(item.name)
                try manager.downloadAgain(id!, from: url)
            case 10 where id != nil && random.chance(50):
                // A refreshed (signed) URL of the same file: the `.part` may resume from it.
                let base = SimulatedServer.resource(machine.item(id!, now: 0).url.absoluteString)
                let fresh = URL(string: "\(base)?sig=\(random.int(1...3))")!
                note("replaceURL \(id!.rawValue) \(fresh.absoluteString)")
                try manager.replaceURL(id!, with: fresh)
            case 11 where random.chance(30):
                let deleting = random.chance(50)
                note("removeAll(deletingFiles: \(deleting))")
                removing.formUnion(ids)
                leftFiles.formUnion(ids.map { machine.item($0, now: 0).name })
                completed = [:]
                manager.removeAll(deletingFiles: deleting)
            case 10:
                close(manager)
                return
            default:
                note("(no control)")
            }
        } catch {
            note("  refused: \(error)")
        }
        // Sometimes the app closes the manager in the same block, before anything the call queued
        // has run (a stopped run's end among them); more often after the call met a fault (its records
        // and unlinks are then owed), and then the full disk may fail the close's rewrite as well.
        let metFault = disk.pendingFaults.count < pendingFaults
        if random.chance(metFault ? 25 : 4) {
            note("and in the same block:")
            if metFault, random.chance(50) {
                disk.fail(.write, name: DownloadJournal.fileName + ".tmp", with: ENOSPC)
                note("disk: the coming write of \(DownloadJournal.fileName).tmp fails \(ENOSPC)")
                injectedFaults += 1
            }
            close(manager)
        }
    }

    private func close(_ manager: DownloadManager) {
        note("close")
        let faults = disk.pendingFaults.count
        unlinksNeedSyncedRecords = true
        manager.close()
        unlinksNeedSyncedRecords = false
        // With its journal written whole (no fault met, no crash in it), what it unlinks is gone: no
        // `.part` is left of a removed or cancelled item.
        if disk.pendingFaults.count == faults, !disk.hasCrashed, let closed = manager.state.withLock({ Optional($0) }) {
            checkParts(of: closed, after: "a close")
        }
        process.closed.append(manager)
        process.manager = nil
        noteJournalOnDisk()
    }

    /// A request for one of the server's files: mostly under its own name, sometimes with a checksum
    /// of its current version (a later version fails it), over several connections, with a header, a
    /// speed limit, or replacing what is under its name.
    private func request() -> DownloadManager.Request {
        let url = random.pick(urls)
        let name =
            random.chance(90)
            ? url.lastPathComponent : random.pick(["../x", "notes.txt", "f0.bin", Self.longName(url)])
        for sidecar in PartNames(for: name).all { sidecarOwners[sidecar] = name }
        requestedNames.insert(name)
        let checksum =
            random.chance(25)
            ? server.resources[url.absoluteString].map {
                Checksum.digest(
                    random.pick(Checksum.Algorithm.allCases),
                    of: SimulatedServer.content(url.absoluteString, version: $0.version, length: $0.length))
            } : nil
        return DownloadManager.Request(
            url: url, name: name, checksum: checksum, replacesExistingFile: random.chance(8),
            headers: random.chance(20) ? [try! .init("X-Token", "1")] : [],
            maxBytesPerSecond: random.chance(15) ? 1500 : nil, connections: random.chance(30) ? random.int(2...4) : 1)
    }

    /// A name too long for `NAME.part.meta.tmp`: its sidecars are named by its hash (`PartNames`).
    static func longName(_ url: URL) -> String {
        String(repeating: "l", count: PartNames.longestPlainName) + "-" + url.lastPathComponent
    }

    private func describe(_ request: DownloadManager.Request) -> String {
        var traits: [String] = []
        if request.checksum != nil { traits.append("checksum") }
        if request.replacesExistingFile { traits.append("replacing") }
        if !request.headers.isEmpty { traits.append("header") }
        if let limit = request.maxBytesPerSecond { traits.append("\(limit) B/s") }
        if request.connections > 1 { traits.append("\(request.connections) connections") }
        return request.name! + (traits.isEmpty ? "" : " (" + traits.joined(separator: ", ") + ")")
    }

    private func fault() {
        let names = faultable
        let operation = random.pick([
            MemoryFault.Operation.write, .sync, .open, .rename, .truncate, .unlink, .folderSync,
        ])
        // A folder's sync is matched by the folder's path.
        let name = operation == .folderSync ? folder : random.pick(names)
        let code = random.pick([ENOSPC, EIO, EACCES])
        disk.fail(operation, name: name, with: code, skipping: random.int(0...2))
        // A full disk fails the journal's cut-back of what a failed write left, too, half the time.
        if operation == .write, name == DownloadJournal.fileName, random.chance(50) {
            disk.fail(.truncate, name: name, with: code)
        }
        // A file whose unlink failed stays where it is: nothing removes it later.
        if operation == .unlink { orphaned.insert(name) }
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
        let power = random.chance(35)
        if power {
            disk.powerLoss()
            note("power loss")
        } else {
            disk.kill()
            note("kill -9")
        }
        died(afterPowerLoss: power)
    }

    /// A kill or a power loss lands between two file-system operations of what comes next (a
    /// transfer's step, a timer, a block of the queue, a restart's recovery, a cancel or a removal),
    /// never inside a call whose result the schedule judges (`control` calls it off).
    private func crashWithin() {
        let power = random.chance(35)
        let operations = random.int(0...8)
        disk.planCrash(afterOperations: operations, powerLoss: power)
        note("a \(power ? "power loss" : "kill -9") comes after \(operations) more file operations")
    }

    /// A planned crash happened: the process is dead (true).
    @discardableResult
    private func tookPlannedCrash() -> Bool {
        guard let (power, operation) = disk.takeCrash() else { return false }
        note("  (\(power ? "the power went" : "killed") before \(operation))")
        died(afterPowerLoss: power)
        return true
    }

    /// The process died (its disk killed, or the power gone): its queue stops, its transfers drop,
    /// and a new process takes over in the next move.
    private func died(afterPowerLoss power: Bool) {
        kills += 1
        if power { powerLosses += 1 }
        // Killed while writing a `.part`'s metadata: its temporary file is left.
        if let transfer = process.transport.transfers.first, random.chance(30),
            let name = machine?.ids.map({ machine!.item($0, now: 0).name }).first(where: {
                transfer.request.url!.lastPathComponent == $0
            })
        {
            disk.plant(.file(Data("{\"url".utf8)), named: PartNames(for: name).metadataTemporary, in: folder)
            note("  (killed writing \(name)'s metadata)")
        }
        // A new process owes no unlink of the dead one's: what it unlinks, a record of its own announces.
        discarded = []
        process.queue.suspend()
        process.transport.dropAll()
        dead.append(process)
        process = Process(number: dead.count)
        noteJournalOnDisk(afterPowerLoss: power)
        if power, durability == .process {
            unsyncedLost = true
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
        if power {
            // A `.part` (or sidecar) whose item's records the power took is nobody's now: nothing removes it.
            let names = Set(
                (journalOnDisk()?.entries ?? []).map(\.name))
            for name in disk.names(in: folder) {
                guard let owner = sidecarOwners[name] ?? (name.hasSuffix(".part") ? String(name.dropLast(5)) : nil),
                    !names.contains(owner)
                else { continue }
                orphaned.insert(name)
            }
        }
        if random.chance(5) { plantRecord() }
        // The next process may die in its recovery (not once the schedule settles).
        if !server.honest, random.chance(10) { crashWithin() }
        // The new process opens the folder in the next move, on its own queue: this one is the dead
        // process's, and what the new manager queues would run beside it.
    }

    /// A record planted in the journal, naming a file outside the folder or a URL of another scheme.
    private func plantRecord() {
        guard var journal = disk.contents(of: DownloadJournal.fileName, in: folder), !journal.isEmpty else { return }
        var record = DownloadJournal.Record(op: .add, id: UInt64(900 + random.int(0...9)))
        if random.chance(50) {
            record.url = "http://h0.example/x"
            record.name = random.pick(["../x", "a/b", ".", "..", DownloadJournal.fileName])
        } else {
            record.url = random.pick(["file:///etc/passwd", "ftp://h0.example/x", "not a url"])
            record.name = "x.bin"
        }
        // On a line of its own, also after a torn last line.
        if journal.last != UInt8(ascii: "\n") { journal.append(UInt8(ascii: "\n")) }
        disk.plant(.file(journal + DownloadJournal.encode([record])), named: DownloadJournal.fileName, in: folder)
        note("user: a record for \(record.name!) from \(record.url!) is planted in the journal")
    }

    /// The journal on the disk is the last word: a removal it no longer has an item of is final.
    private func noteJournalOnDisk(afterPowerLoss: Bool = false) {
        let contents = journalOnDisk()
        let recorded = Set((contents?.entries ?? []).map(\.id))
        for id in removing where !recorded.contains(id.rawValue) { removed.insert(id) }
        removing = []
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
        let transfers = process.transport.ready
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
            if !startsRestored {
                // Restored items wait to be added again.
                for id in machine.ids where !isFinal(machine.item(id, now: 0)) {
                    let item = machine.item(id, now: 0)
                    _ = try? manager.add(item.url, name: item.name, checksum: item.checksum)
                }
            }
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
                // A file a removed item left (whole, or short after a power loss), or a completed file a
                // power loss cut short with `.process` durability: the manager never replaces one.
                || (failure.kind == .fileInTheWay && (leftFiles.contains(item.name) || unsyncedLost))
                // A `.part` of the user's beside a file whose `done` a power loss took: the restore
                // cannot tell it from the item's own (a `.part` cut short by the power), and fetches
                // the file again, which finds the file in the way.
                || (failure.kind == .fileInTheWay && foreign[item.name + ".part"] != nil)
        default: false
        }
    }

    /// Once nothing is left to happen: every item is completed, or failed for a reason of its own,
    /// and every `.part` is an item's that may resume it.
    private func checkSettled() throws(Violation) {
        guard let machine else { throw violation("no manager at the end") }
        let owners = Dictionary(machine.ids.map { (machine.item($0, now: 0).name, $0) }) { first, _ in first }
        for name in disk.names(in: folder)
        where name.hasSuffix(".part") && foreign[name] == nil && !orphaned.contains(name) {
            let owner = owners[sidecarOwners[name] ?? String(name.dropLast(5))].map { machine.item($0, now: 0) }
            switch owner?.state {
            case nil: throw violation("\(name) is left with no item")
            case .cancelled?, .completed?: throw violation("\(name) is left beside a \(owner!.state.name) item")
            case .failed(let failure)? where failure.kind == .checksumMismatch:
                throw violation("\(name) is left after a checksum mismatch")
            default: break
            }
        }
        // No metadata write is under way: a temporary one left is nobody's to finish.
        for name in disk.names(in: folder)
        where name.hasSuffix(".part.meta.tmp") && foreign[name] == nil && !orphaned.contains(name) {
            throw violation("\(name) is left at the end")
        }
        for id in machine.ids where !isFinal(machine.item(id, now: 0)) {
            let item = machine.item(id, now: 0)
            throw violation(
                "\(item.name) ended \(item.state) with an honest server; scheduled: "
                    + "\(process.scheduler.scheduledDelays), transfers: \(process.transport.transfers.count)")
        }
    }

    // MARK: Invariants

    /// Items failed by their checksum threw their `.part` away: its unlink may come later (owed by a
    /// write that failed), after a resume. Noted after each move, and before the next one (the queue
    /// ran blocks between them: a run's end among them).
    private func noteDiscards() {
        guard let machine else { return }
        for id in machine.ids {
            if case .failed(let failure) = machine.item(id, now: 0).state, failure.kind == .checksumMismatch {
                discarded.insert(id.rawValue)
            }
        }
    }

    private func check() throws(Violation) {
        if let broken { throw violation(broken) }
        for name in disk.names(in: folder) where !isKnown(name) {
            throw violation(
                "\(name) is in the folder: not the journal, a file of the user's, nor an item's or its sidecar")
        }
        for (name, planted) in foreign where !name.hasSuffix(".part") && !replacing.contains(name) {
            switch planted {
            case .file(let data) where disk.contents(of: name, in: folder) != data:
                throw violation("a file the manager does not own was touched: \(name)")
            case .directory where disk.facts(of: name, in: folder) != .directory:
                throw violation("a folder the manager does not own was touched: \(name)")
            default: break
            }
        }
        for (name, bytes) in completed {
            let stamp = disk.stamp(of: name, in: folder)
            if stamp != nil, checkedCompleted[name] == stamp { continue }
            guard disk.contents(of: name, in: folder) == bytes else {
                throw violation("the completed file \(name) was lost or changed")
            }
            checkedCompleted[name] = stamp
        }
        noteDiscards()
        guard let machine else { return }
        let ids = machine.ids
        let items = ids.map { machine.item($0, now: 0) }
        for (id, item) in zip(ids, items) {
            if removed.contains(id) { throw violation("the removed item \(id.rawValue) is back") }
            if item.progress.received < 0 { throw violation("negative bytes for \(item.name)") }
            if let expected = item.progress.expected, expected > DownloadLimits.maximumLength {
                throw violation("\(item.name) expects \(expected) bytes, past the limit")
            }
            // Every `.part` that is this item's (by its metadata; another item's, removed, waits to be
            // unlinked) is the start of one version of its resource, and no longer than its total.
            let parts = partNames(of: item.name)
            if foreign[parts.part] == nil, let stamp = disk.stamp(of: parts.part, in: folder),
                checkedParts[item.name] != stamp, let whole = disk.contents(of: parts.part, in: folder),
                let metadata = metadata(parts.metadata), metadata.item == id.rawValue
            {
                // The bytes a resume takes: past its last flush, only those written in this boot (after
                // a power loss they may be another version's, a truncation that never reached the disk).
                let part =
                    metadata.isWrittenInBoot(disk.bootIdentity) ? whole : whole.prefix(Int(metadata.synced ?? 0))
                if let total = metadata.total, part.count > total {
                    throw violation("\(parts.metadata) says \(total) bytes; its .part has \(part.count)")
                }
                guard server.isPrefixOfVersion(Array(part), of: metadata.url) else {
                    throw violation(
                        "\(parts.part) (\(part.count) bytes) is not the start of any version of \(metadata.url)")
                }
                checkedParts[item.name] = stamp
            }
            guard case .completed = item.state, completed[item.name] == nil, foreign[item.name] == nil else { continue }
            // Newly completed: one whole version of its resource, never a splice.
            guard let bytes = disk.contents(of: item.name, in: folder) else {
                throw violation("\(item.name) is completed with no file")
            }
            guard server.isVersion(Array(bytes), of: item.url.absoluteString) else {
                throw violation("\(item.name) is completed with bytes of no single version (a splice)")
            }
            if let checksum = item.checksum, Checksum.digest(checksum.algorithm, of: Array(bytes)) != checksum {
                throw violation("\(item.name) is completed with bytes its checksum refuses")
            }
            completed[item.name] = bytes
        }
        // What a user reads: the items and totals the machine holds (every eighth move: a tenth of
        // the simulation's time after every one).
        let totals = machine.totals(of: items, now: 0)
        if let manager, moves % 8 == 0 {
            let read = manager.items
            guard read.map(\.id) == ids, read.allSatisfy({ manager.item($0.id)?.state == $0.state }),
                read.map(\.state) == items.map(\.state), manager.totals.received == totals.received
            else { throw violation("items, item(_:) or totals disagree with the manager's state") }
        }
        if totals.received < 0 || totals.expected < 0 || totals.received > totals.expected
            || totals.receivedOfUnknownLength < 0 || !(0...1).contains(totals.fraction ?? 0)
        {
            throw violation("totals out of bounds: \(totals)")
        }
        // Read only when it changed (its stamp), as most moves write a `.part` and no record.
        let stamp = disk.stamp(of: DownloadJournal.fileName, in: folder)
        let (disk, folder) = (disk, folder)
        let journal = { disk.contents(of: DownloadJournal.fileName, in: folder) ?? Data() }
        if journalLines?.stamp != stamp { journalLines = (stamp, Self.lines(in: journal())) }
        // Bounded: compacted once the records since its last whole write outnumber its items and the
        // threshold (what one write appends past that, a batch or a `removeAll`, is a few lines).
        let lines = journalLines!.count
        if lines > 2 * (process.compactionThreshold + machine.items.count) + 64 {
            throw violation("the journal has \(lines) lines for \(machine.items.count) items")
        }
        if let mismatch = replay.mismatch(
            machine, stamp: stamp, journal: journal, part: { self.partNames(of: $0).part },
            facts: { disk.facts(of: $0, in: folder) },
            parsed: { journals.contents(of: $0) })
        {
            throw violation(
                mismatch + "\njournal:\n" + String(decoding: journal(), as: UTF8.self) + "\nlive: "
                    + "\(machine.journalEntries.map { "\($0.id) \($0.name) \($0.status)" })")
        }
    }

    private func partNames(of name: String) -> PartNames {
        if let made = madePartNames[name] { return made }
        let made = PartNames(for: name)
        madePartNames[name] = made
        return made
    }

    /// How many lines `journal` has.
    private static func lines(in journal: Data) -> Int {
        journal.withUnsafeBytes { bytes -> Int in
            guard var next = bytes.baseAddress else { return 0 }
            let end = next + bytes.count
            var count = 0
            while next < end, let newline = memchr(next, Int32(UInt8(ascii: "\n")), next.distance(to: end)) {
                count += 1
                next = UnsafeRawPointer(newline) + 1
            }
            return count
        }
    }

    /// Before the manager unlinks `names` (its own test hook): the journal on the disk already says
    /// why. A file or `.part` of a name whose item the journal still has as finishing or completed
    /// must stay: a process killed now would restore that item with its file or `.part` gone.
    private func checkUnlink(_ names: [String]) {
        // A process that just died goes on to the end of its block, with every operation failing.
        guard !disk.hasCrashed, let entries = journalOnDisk()?.entries else { return }
        for name in names {
            // The file, or its `.part` (its metadata may go once the file has its name).
            let item = sidecarOwners[name].flatMap { PartNames(for: $0).part == name ? $0 : nil } ?? name
            guard let entry = entries.first(where: { $0.name == item }) else { continue }
            switch entry.status {
            case .finishing: broken = "\(name) was unlinked while the journal has \(item) \(entry.status)"
            // A completed item's `.part` is what a download of it again left: nobody resumes it.
            case .completed where item == name:
                broken = "\(name) was unlinked while the journal has \(item) \(entry.status)"
            default: break
            }
        }
        // A `.part` is its item's progress until a record says otherwise (a cancel, a removal, a
        // failed checksum): one unlinked while the journal has its item waiting, an item never
        // cancelled nor failed by its checksum, was announced by no record on disk. `close()` and a
        // recovery, which need not hurry, unlink only what the synced journal announces (with
        // `.system` durability): a power loss right after them brings no item back without its `.part`.
        // The item is the metadata's id under the `.part`'s name: metadata a power loss left from a
        // journal it took back may give an id the journal since gave to another name.
        // The unlinked `.part`s, with the item name and the id their metadata gives.
        let parts = names.compactMap { name -> (name: String, item: String, owner: UInt64)? in
            guard let item = sidecarOwners[name], PartNames(for: item).part == name,
                let owner = metadata(PartNames(for: item).metadata)?.item
            else { return nil }
            return (name, item, owner)
        }
        var journals = [("journal", entries)]
        if unlinksNeedSyncedRecords, durability == .system, let durable = durableJournal()?.entries {
            journals.append(("synced journal", durable))
        }
        for (name, item, owner) in parts {
            for (journal, entries) in journals {
                guard journal != "journal" || !discarded.contains(owner),
                    let entry = entries.first(where: { $0.id == owner && $0.name == item })
                else { continue }
                switch entry.status {
                case .pending, .suspended:
                    broken = "\(name) was unlinked while the \(journal) has item \(owner) \(entry.status)"
                case .failed(let failure) where failure.kind != .checksumMismatch:
                    broken = "\(name) was unlinked while the \(journal) has item \(owner) failed: \(failure.message)"
                default: break
                }
            }
        }
        // With `.system` durability a record that overrules a `finishing` is synced before the `.part`
        // goes: a restore after a power loss would take any file of that size under the name for the
        // renamed `.part`. (A cancel's or a removal's record need not be: a power loss may bring the
        // item back, to start over.) A `.part` made after that one took the name (a download of the
        // completed item again) is not the one the record is about: a restore finds the file.
        guard durability == .system, let durable = durableJournal() else { return }
        for (name, item, owner) in parts {
            guard let entry = durable.entries.first(where: { $0.id == owner && $0.name == item }),
                finishingParts[owner].map({ $0 == disk.stamp(of: name, in: folder)?.inode }) ?? true
            else { continue }
            if case .finishing = entry.status {
                broken = "\(name) was unlinked while the synced journal has item \(owner) \(entry.status)"
            }
        }
    }

    /// Just before an item's complete `.part` takes its name (the manager's own test hook): the journal
    /// on the disk already has the item finishing, so that a process killed after the rename restores
    /// it completed, not pending with its own file in the way.
    private func checkFinishing(_ id: ItemID) {
        let entries = journalOnDisk()?.entries
        let entry = entries?.first { $0.id == id.rawValue }
        // Also when the process just died: its record may be on the disk.
        finishingParts[id.rawValue] = entry.flatMap { disk.stamp(of: PartNames(for: $0.name).part, in: folder)?.inode }
        guard !disk.hasCrashed, entries != nil else { return }
        guard case .finishing? = entry?.status else {
            broken =
                "item \(id.rawValue) renames its .part while the journal has it \(entry.map { "\($0.status)" } ?? "not at all")"
            return
        }
        // With `.system` durability, on the disk itself: a power loss after the rename keeps it.
        guard durability == .system else { return }
        let durable = durableJournal()?.entries.first { $0.id == id.rawValue }
        guard case .finishing? = durable?.status else {
            broken =
                "item \(id.rawValue) renames its .part while the synced journal has it "
                + (durable.map { "\($0.status)" } ?? "not at all")
            return
        }
    }

    /// The `.part.meta` of that name, decoded (nil when there is none, or it does not decode); a
    /// metadata file changes far less often than its `.part`, and is decoded once per change.
    private func metadata(_ name: String) -> PartMetadata? {
        guard let data = disk.contents(of: name, in: folder) else { return nil }
        if let known = decodedMetadata[name], known.data == data { return known.metadata }
        let metadata = try? JSONDecoder().decode(PartMetadata.self, from: data)
        decodedMetadata[name] = (data, metadata)
        return metadata
    }

    /// Whether `name`, in the folder, is the journal or its `.tmp`, a file of the user's (or one nothing
    /// removes), or the name or a sidecar of an item a request gave.
    private func isKnown(_ name: String) -> Bool {
        name == DownloadJournal.fileName || name == DownloadJournal.fileName + ".tmp" || foreign[name] != nil
            || orphaned.contains(name) || requestedNames.contains(name) || sidecarOwners[name] != nil
    }

    /// A `waitUntilFinished()` returned: unless the manager was closed meanwhile, nothing it reports is
    /// active, and once the journal has no record waiting, it has every completion it reports.
    private func checkFinished(_ summary: DownloadManager.Summary, of manager: DownloadManager?) {
        guard let manager, let machine = manager.state.withLock({ $0.isClosed ? nil : $0 }) else { return }
        for item in summary.items {
            switch item.state {
            case .pending, .running, .verifying:
                broken = "waitUntilFinished returned with \(item.name) \(item.state)"
            default: break
            }
        }
        guard machine.journal.waitingCount == 0, !machine.journal.isCompactionDue,
            let entries = journalOnDisk()?.entries
        else { return }
        for item in summary.completed where machine.itemIfAny(item.id, now: 0)?.state == .completed {
            guard case .completed? = entries.first(where: { $0.id == item.id.rawValue })?.status else {
                broken = "waitUntilFinished returned with \(item.name) completed, not in the journal"
                return
            }
        }
    }

    /// What the journal on the disk says (nil when there is none, or it does not read).
    /// The journal a power loss now would leave.
    private func durableJournal() -> DownloadJournal.Contents? {
        disk.durableContents(of: DownloadJournal.fileName, in: folder).flatMap { durableJournals.contents(of: $0) }
    }

    private func journalOnDisk() -> DownloadJournal.Contents? {
        disk.contents(of: DownloadJournal.fileName, in: folder).flatMap { journals.contents(of: $0) }
    }

    /// An update the live manager delivered: its events replay to its snapshot of the items.
    private static func replay(
        _ update: DownloadManager.Update, onto replayed: inout [ItemID: DownloadManager.State]
    ) -> String? {
        for event in update.events {
            switch event {
            case .changed(let item): replayed[item.id] = item.state
            case .removed(let item): replayed[item.id] = nil
            case .allFinished: break
            }
        }
        let snapshot = Dictionary(update.items.map { ($0.id, $0.state) }) { first, _ in first }
        guard snapshot != replayed else { return nil }
        return "the updates replay to \(replayed), not to their snapshot \(snapshot) (events: \(update.events))"
    }

    /// A consumer of `updates()`, on a task that runs on this process's queue: its first update is
    /// a snapshot, each later one's events replay to its own, and it ends once the manager is closed.
    private func consumeUpdates(of manager: DownloadManager) {
        note("a consumer of updates() starts")
        Task(executorPreference: process.executor) { [weak self, manager] in
            var replayed: [ItemID: DownloadManager.State] = [:]
            var first = true
            for await update in manager.updates() {
                if first {
                    replayed = Dictionary(update.items.map { ($0.id, $0.state) }) { first, _ in first }
                    first = false
                } else if let broken = Self.replay(update, onto: &replayed) {
                    self?.broken = "updates(): " + broken
                }
            }
        }
    }

    /// After a restart: only items an `add` returned, none removed for good.
    private func checkRestored() {
        guard let machine else { return }
        for id in machine.ids {
            let item = machine.item(id, now: 0)
            if !added.contains(id) { broken = "item \(id.rawValue), never added, is restored" }
            if (try? DownloadManager.checkName(item.name)) == nil {
                broken = "item \(id.rawValue) is restored with the name \(item.name)"
            }
            let parts = PartNames(for: item.name)
            if disk.facts(of: parts.metadataTemporary, in: folder) != .missing,
                !orphaned.contains(parts.metadataTemporary)
            {
                broken = "\(parts.metadataTemporary) is left after a restore"
            }
            if disk.facts(of: parts.metadata, in: folder) != .missing,
                disk.facts(of: parts.part, in: folder) == .missing,
                !orphaned.contains(parts.metadata)
            {
                broken = "\(parts.metadata) is left without its .part after a restore"
            }
        }
        checkParts(of: machine, after: "a restore")
    }

    /// The `.part`s of removed and cancelled items are gone: each one left is an item's to resume.
    private func checkParts(of machine: DownloadManager.Machine, after what: String) {
        let owners = Dictionary(machine.ids.map { (machine.item($0, now: 0).name, $0) }) { first, _ in first }
        for name in disk.names(in: folder)
        where name.hasSuffix(".part") && foreign[name] == nil && !orphaned.contains(name) {
            let owner = owners[sidecarOwners[name] ?? String(name.dropLast(5))].map { machine.item($0, now: 0) }
            switch owner?.state {
            case nil: broken = "\(name) is left after \(what), with no item"
            case .cancelled?: broken = "\(name) is left after \(what), beside a cancelled item"
            default: break
            }
        }
    }
}
