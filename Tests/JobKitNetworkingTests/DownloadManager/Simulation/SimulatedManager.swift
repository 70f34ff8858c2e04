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

    /// One run of an item, between the manager's start and its end.
    struct Run {
        enum Step {
            /// The body has not opened the `.part` yet.
            case opening
            /// The request is out.
            case requested(DownloadAttemptStateMachine)
            /// The body arrives: what is left of it, and whether the connection drops after it.
            case receiving(DownloadAttemptStateMachine, SimulatedServer.Response, rest: [UInt8], writeAt: Int64)
            /// The `.part` is complete: the rename is next.
            case finalizing
            /// The run is over; the manager hears how.
            case ended(Machine.Outcome)
        }

        let start: Machine.Start
        var step: Step
        var metadata: PartMetadata?
        var cancelled = false
    }

    private(set) var machine: Machine
    private(set) var runs: [UInt64: Run] = [:]
    /// Unlinks owed until a journal write succeeds, with the names they clean.
    private var owedUnlinks: [String] = []
    private var owedCleaning: [String] = []
    private(set) var isClosed = false
    /// A journal write failed: the manager tries again later (`retryJournal`).
    private(set) var retryOwed = false
    var log: [String] = []
    /// Unlinks the journal on disk did not justify (see `noteUnjustifiedUnlinks`).
    private(set) var unjustifiedUnlinks: [String] = []

    static let directory = URL(fileURLWithPath: "/simulated")

    /// Opens the folder as `DownloadManager.init` does: recovers the journal, rewrites it, restores.
    init(disk: inout SimulatedDisk, limit: Int, perHost: Int?) throws {
        let recovery = try JournalRecovery(journal: disk.journal, facts: disk.facts)
        for name in recovery.unlinks { disk.unlink(name) }
        try disk.replaceJournal(recovery.journal)
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
        let records = Machine.records(of: prepared)
        if !records.isEmpty { try disk.appendJournal(DownloadJournal.encode(records)) }
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
            try Self.apply(machine.compacted(), disk: &disk)
            compacted = true
        } catch {
            compacted = false
        }
        isClosed = true
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

    // MARK: Carrying out actions

    mutating func writeJournal(disk: inout SimulatedDisk) throws {
        guard !isClosed, let write = machine.takeJournal() else { return }
        do {
            try Self.apply(write, disk: &disk)
        } catch {
            machine.untake(write)
            throw error
        }
    }

    static func apply(_ write: Machine.JournalWrite, disk: inout SimulatedDisk) throws {
        switch write {
        case .append(let records): try disk.appendJournal(DownloadJournal.encode(records))
        case .rewrite(let header, let records): try disk.replaceJournal(DownloadJournal.encode(header: header, records))
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
        for generation in actions.cancels { runs[generation]?.cancelled = true }
        noteUnjustifiedUnlinks(unlinks, disk: disk)
        for name in unlinks { disk.unlink(name) }
        if !cleaning.isEmpty { perform(machine.cleaned(cleaning, now: 0), disk: &disk) }
        for start in actions.starts { launch(start, disk: &disk) }
        return failure
    }

    /// Journal first: a file the journal on disk still gives to an item (finishing or completed) is
    /// never unlinked — a crash would bring the item back with its file gone. (A `.part` may go
    /// before its record: at worst an item downloads again.)
    private mutating func noteUnjustifiedUnlinks(_ names: [String], disk: SimulatedDisk) {
        guard !names.isEmpty, let onDisk = try? DownloadJournal.parse(disk.journal) else { return }
        for name in names where disk.facts(name) != .missing {
            guard let entry = onDisk.entries.first(where: { $0.name == name }) else { continue }
            switch entry.status {
            case .finishing, .completed:
                unjustifiedUnlinks.append("unlinked \(name) while the journal says item \(entry.id) is \(entry.status)")
            case .pending, .suspended, .failed, .cancelled:
                break
            }
        }
    }

    private mutating func launch(_ start: Machine.Start, disk: inout SimulatedDisk) {
        guard machine.isCurrent(start.id, start.generation) else {
            runs[start.generation] = Run(start: start, step: .ended(.cancelled))
            return
        }
        if !start.replacesFile, case .file = disk.facts(start.name) {
            let failure = DownloadManager.ItemError(kind: .fileInTheWay, message: "\(start.name) exists")
            runs[start.generation] = Run(start: start, step: .ended(.failed(failure)))
            return
        }
        runs[start.generation] = Run(start: start, step: .opening)
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
        let start = run.start
        let parts = PartNames(for: start.name)
        func end(_ outcome: Machine.Outcome) {
            run.step = .ended(outcome)
            runs[generation] = run
        }
        func fail(_ error: any Error) { end(.failed(DownloadManager.ItemError(error))) }
        if run.cancelled, case .ended = run.step {
        } else if run.cancelled, case .finalizing = run.step {
        } else if run.cancelled {
            return end(.cancelled)
        }
        switch run.step {
        case .opening:
            do {
                try disk.openPart(parts.part)
                run.metadata = disk.readMetadata(parts.metadata)
                let length = Int64(disk.bytes(parts.part)?.count ?? 0)
                let offset = DownloadAttemptStateMachine.resumeOffset(
                    partLength: length, metadata: run.metadata, url: start.url, item: start.id.rawValue,
                    blindResume: false)
                if offset == nil { try disk.truncate(parts.part) }
                run.step = .requested(
                    DownloadAttemptStateMachine(
                        url: start.url, path: start.name, resumingAt: offset, metadata: run.metadata,
                        item: start.id.rawValue))
                runs[generation] = run
            } catch {
                fail(error)
            }
        case .requested(var attempt):
            let response = server.respond(
                to: start.url.absoluteString, headers: attempt.requestHeaders, random: &random)
            log.append("  run \(generation) \(start.name): \(response.note)")
            do {
                switch try attempt.received(status: response.status, headers: response.headers) {
                case .write(let offset, let total, let truncating, let metadata):
                    if truncating { try disk.truncate(parts.part) }
                    if let metadata {
                        try disk.writeMetadata(parts.metadata, metadata)
                        run.metadata = metadata
                    }
                    _ = machine.began(start.id, generation: generation, offset: offset, total: total, now: 0)
                    run.step = .receiving(attempt, response, rest: response.body, writeAt: truncating ? 0 : offset)
                case .startOver:
                    try disk.truncate(parts.part)
                    disk.unlink(parts.metadata)
                    run.metadata = nil
                    run.step = .requested(
                        DownloadAttemptStateMachine(url: start.url, path: start.name, resumingAt: nil, metadata: nil))
                case .readErrorBody, .finalizeWhenDone:
                    run.step = .receiving(attempt, response, rest: response.body, writeAt: 0)
                }
                runs[generation] = run
            } catch {
                fail(error)
            }
        case .receiving(var attempt, let response, let rest, let writeAt):
            let dropsNow = response.drops && (rest.isEmpty || random.chance(30))
            if rest.isEmpty || dropsNow {
                switch attempt.ended(withError: dropsNow) {
                case .startOver:
                    do {
                        try disk.truncate(parts.part)
                        run.metadata = nil
                        run.step = .requested(
                            DownloadAttemptStateMachine(
                                url: start.url, path: start.name, resumingAt: nil, metadata: nil))
                        runs[generation] = run
                    } catch {
                        fail(error)
                    }
                case .failWithStatus(let body):
                    let head = HTTPURLResponse(
                        url: start.url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: [:])!
                    fail(HTTPStatusError(HTTPReply(head, body: Data(body))))
                case .failWithTransportError, .failWithoutResponse:
                    fail(TransportError(URLError(.networkConnectionLost), url: start.url))
                case .fail(let error):
                    fail(error)
                case .finalize:
                    run.step = .finalizing
                    runs[generation] = run
                }
                return
            }
            let piece = Array(rest.prefix(random.int(1...max(1, rest.count))))
            do {
                let action = try piece.withUnsafeBytes { try attempt.received($0) }
                var at = writeAt
                if case .write = action {
                    try disk.write(parts.part, at: writeAt, piece)
                    at += Int64(piece.count)
                    _ = machine.received(start.id, generation: generation, count: piece.count, now: 0)
                }
                run.step = .receiving(attempt, response, rest: Array(rest.dropFirst(piece.count)), writeAt: at)
                runs[generation] = run
            } catch {
                fail(error)
            }
        case .finalizing:
            let length = Int64(disk.bytes(parts.part)?.count ?? 0)
            guard machine.finishing(start.id, generation: generation, size: length) else { return end(.cancelled) }
            do {
                try writeJournal(disk: &disk)
                // The rename happens only if the run is not cancelled by then (`PartFile.finalize`).
                guard !run.cancelled else { return end(.cancelled) }
                try disk.renameNoReplace(parts.part, to: start.name)
                disk.unlink(parts.metadata)
                end(.completed)
            } catch {
                fail(error)
            }
        case .ended(let outcome):
            runs[generation] = nil
            log.append("  run \(generation) \(start.name) ended: \(outcome)")
            perform(machine.runEnded(start.id, generation: generation, outcome, now: 0), disk: &disk)
        }
    }
}
