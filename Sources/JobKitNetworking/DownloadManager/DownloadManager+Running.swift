import AsyncHTTPClient
import Dispatch
import Foundation
import JobKit
import Logging

extension DownloadManager {
    // MARK: Running

    typealias Machine = DownloadManagerStateMachine<JobHandle>

    /// Makes a control's transition and carries out its actions. The transition is made holding the
    /// journal's pen: an `add` holds it from its checks to its commit, so that no control changes what
    /// it checked (removes the item a request is, say) in between.
    func control(
        _ transition: (inout Machine, UInt64) throws(DownloadManagerError) -> Machine.Actions
    ) throws(DownloadManagerError) {
        let (actions, written) = try withPen { () throws(DownloadManagerError) in
            let result = state.withLock { machine in
                Result { () throws(DownloadManagerError) in try transition(&machine, now()) }
            }
            let actions = try result.get()
            return (actions, writeJournalHoldingPen(for: actions))
        }
        if let failure = carryOut(actions, written) { throw failure }
    }

    /// A transition of every item, made holding the journal's pen (see `control`).
    func all(_ transition: (inout Machine, ItemID, UInt64) throws(DownloadManagerError) -> Machine.Actions) {
        let (actions, written) = withPen {
            let actions = state.withLock { machine -> Machine.Actions in
                var actions = Machine.Actions()
                let now = now()
                machine.holdStarts()
                for id in machine.ids {
                    if let more = try? transition(&machine, id, now) { actions.merge(more) }
                }
                actions.merge(machine.releaseStarts(now: now))
                return actions
            }
            return (actions, writeJournalHoldingPen(for: actions))
        }
        carryOut(actions, written)
    }

    /// What a transition's journal write came to: its failure, and the unlinks (and the names they
    /// clean) that may be done now.
    typealias JournalOutcome = (failure: DownloadManagerError?, unlinks: [String], cleaning: [String])

    /// Carries out what a transition asked, with no lock held. The journal is written first, or
    /// nothing is unlinked: a process killed after an unlink finds the change that made it (a removed
    /// item does not come back as completed, with its file gone).
    ///
    /// - Returns: the journal's failure, when its records could not be written (they are written
    ///   with the next ones; the unlinks they announce were skipped).
    @discardableResult
    func perform(_ actions: Machine.Actions) -> DownloadManagerError? {
        carryOut(actions, withPen { writeJournalHoldingPen(for: actions) })
    }

    /// With the pen: writes what waits for the journal when `actions` asks (a record, an unlink), or an
    /// unlink owed by an earlier failed write waits on it (with nothing waiting, nothing is written).
    /// Unlinks are owed, with their names held, while a record is unwritten; all that is owed is done
    /// once a write succeeds: a run that ends may unlink what a record still waiting (its item's
    /// `remove`, whose write failed) announces. With the pen, no other write fails (and owes its
    /// unlinks) between this write and the unlinks it allows; decided before the cancels, as a
    /// cancelled run may end, and ask for its own unlinks, at once on another thread. Once the journal
    /// is closed nothing is written, so nothing a record would announce is done (`.closed`).
    func writeJournalHoldingPen(for actions: Machine.Actions) -> JournalOutcome {
        var failure: DownloadManagerError?
        if actions.writesJournal || !actions.unlinks.isEmpty || state.withLock({ $0.pen.owes }) {
            do throws(DownloadManagerError) {
                try writeJournalHoldingPen()
            } catch {
                failure = error
            }
        }
        let allowed = state.withLock {
            $0.pen.wrote(succeeded: failure == nil, unlinks: actions.unlinks, cleaning: actions.cleaning)
        }
        return (failure, allowed.unlinks, allowed.cleaning)
    }

    /// The rest of `actions`, once the journal was written (`written`): with no lock held, the pen
    /// given back.
    @discardableResult
    private func carryOut(_ actions: Machine.Actions, _ written: JournalOutcome) -> DownloadManagerError? {
        let (failure, unlinks, cleaning) = written
        if let failure, failure != .closed { retryJournalLater() }
        if !actions.cancels.isEmpty { configuration.testHooks.beforeCancel() }
        for handle in actions.cancels { handle.cancel() }
        dropRefreshes(actions.dropsRefreshes)
        if !unlinks.isEmpty {
            Self.unlink(unlinks, in: folder, hooks: configuration.testHooks)
            // A `close()` waiting for them may let the directory go.
            state.withLock { $0.pen.unlinked() }?.signal()
        }
        // What waited for these unlinks (a resumed or re-added item of the name) may start now.
        if !cleaning.isEmpty {
            perform(state.withLock { $0.cleaned(cleaning, now: now()) })
        }
        for start in actions.starts { launch(start) }
        if actions.syncsJournal { syncJournalSoon() }
        schedule(actions.wake)
        for (waiter, summary) in actions.waiters { waiter.resume(returning: summary) }
        return failure
    }

    /// Starts the run of an item.
    func launch(_ start: Machine.Start) {
        // Suspended, cancelled or removed since it was claimed (by an `…All` that freed the slot
        // it took, say): it never starts, and reports its end for what its cancellation left.
        guard state.withLock({ $0.isCurrent(start.id, start.generation) }) else {
            return ended(start, .failure(JobError.cancelled))
        }
        let file = directory.appendingPathComponent(start.name, isDirectory: false)
        // A file under the name (the journal's word that it is the manager's is not proof enough to
        // replace it): only a request that said so replaces one. The rename checks again.
        if !start.replacesFile, case .file = folder.facts(start.name) {
            let failure = ItemError(
                kind: .fileInTheWay,
                message: "\(file.path) exists and was not downloaded by this manager: it is left as it is")
            // Not inline: the next item starts from there, and a long run of them would nest.
            configuration.queue.async { [self] in ended(start, .failure(failure)) }
            return
        }
        let id = start.id
        let generation = start.generation
        let hooks = DownloadHooks(
            began: { [self] offset, total in
                schedule(
                    state.withLock {
                        $0.began(id, generation: generation, offset: offset, total: total, now: now())
                    })
            },
            // Counted without the manager's lock; the lock only when no delivery waits to show it.
            received: { [self, progress = start.progress] count in
                if progress.add(count) { schedule(state.withLock { $0.progressCounted(now: now()) }) }
            },
            beforeFinalize: { [self] part, length in try finalizing(start, part: part, length: length) },
            connectionsUsed: { [self] count in
                perform(
                    state.withLock {
                        $0.connectionsUsed(id, generation: generation, count: count, now: now())
                    })
            },
            slots: ConnectionSlots(start.connections),
            throttle: Throttle(limiter: limiter, item: id),
            syncInterval: configuration.testHooks.partSyncInterval,
            segmentSize: configuration.testHooks.segmentSize,
            logger: DownloadLog.logger(configuration.logger, for: start))
        var job = Job<URL>.download(
            from: start.url, to: file, transport: transport, blindResume: false, durability: configuration.durability,
            hooks: hooks, folder: (folder, start.name), replacing: start.replacesFile,
            headers: start.headers.map { ($0.name, $0.value) }, item: start.id.rawValue,
            connections: start.connections)
        let retry = configuration.retry
        let tracers = configuration.tracers
        if !tracers.isEmpty { job = job.named("download \(start.name)") }
        if retry.attempts > 1 {
            // `retryingTransientFailures`, with each attempt's failure logged.
            job = DownloadLog.attempts(of: job, retry: retry, logger: hooks.logger)
            if !tracers.isEmpty { job = job.named("attempt") }
            job = job.retry(
                retry.attempts, backoff: retry.backoff, scheduler: configuration.scheduler,
                when: TransientFailure.isTransient)
            if !tracers.isEmpty { job = job.named(start.name) }
        }
        job = tracers.reduce(job) { $0.traced(by: $1) }
        hooks.logger.debug("download started")
        configuration.testHooks.runBoundary(start.name, start.generation, true)
        let handle = job.perform(on: configuration.queue, resultQueue: configuration.queue) { [self] result in
            ended(start, result)
        }
        if let stale = state.withLock({ $0.attach(handle, to: id, generation: generation) }) { stale.cancel() }
    }

    /// The `.part` is complete: verifies it, then records that the file under the name will be ours.
    func finalizing(_ start: Machine.Start, part: PartFile, length: Int64) throws {
        if let checksum = start.checksum {
            schedule(state.withLock { $0.verifying(start.id, generation: start.generation, now: now()) })
            let actual = try part.reading { try Checksum.compute(checksum.algorithm, reading: $0, path: part.part) }
            guard actual == checksum else {
                throw ItemError(
                    kind: .checksumMismatch,
                    message:
                        "checksum mismatch for \(start.name) from \(start.url.redactedString): expected \(checksum), "
                        + "got \(actual); the file was removed")
            }
        }
        guard state.withLock({ $0.finishing(start.id, generation: start.generation, size: length) }) else {
            throw JobError.cancelled
        }
        // Journal first, or nothing: without its `finishing` record the file does not take its name
        // (the run fails, keeping its `.part`; the record is written with the next ones).
        try writeJournal()
        if configuration.durability == .system {
            // The record is on disk before the rename: after a power loss the file is the manager's.
            // Synced through a descriptor of its own, with no lock held: other items' journal
            // writes do not wait for the disk (a compaction meanwhile writes and syncs the record too).
            // A sync that fails stops the rename (the run fails, keeping its `.part`): after a power
            // loss the journal could say the item pending while its complete file has its name.
            if state.withLock({ !$0.pen.isClosed }), let failure = JournalFile.sync(in: folder) {
                throw DownloadManagerError.cannotUseDirectory(
                    directory.path, reason: "cannot sync \(journalURL.path): \(SystemCall.errorText(failure))")
            }
        }
        configuration.testHooks.afterFinishing(start.id)
    }

    func ended(_ start: Machine.Start, _ result: Result<URL, any Error>) {
        configuration.testHooks.runBoundary(start.name, start.generation, false)
        let outcome: Machine.Outcome
        switch result {
        case .success: outcome = .completed
        case .failure(let error as JobError) where error == .cancelled: outcome = .cancelled
        case .failure(let error):
            let failure = ItemError(error)
            // Refused (an expired signed URL, say): the refresher may give a URL to go on from.
            if refreshesURL(start, after: failure) { return }
            outcome = .failed(failure)
        }
        DownloadLog.ended(start, outcome, logger: configuration.logger)
        let lost = failsAfterReplacingTheOldFile(start, outcome)
        perform(
            state.withLock {
                if lost { $0.oldFileLost(start.id, generation: start.generation) }
                return $0.runEnded(start.id, generation: start.generation, outcome, now: now())
            })
    }

    /// Whether the run of an item downloaded again (`downloadAgain`) ends failed after its new file's
    /// `finishing` record with the old file gone from the name (its size is not there): a rename over
    /// it that was undone. The machine then writes the failure, not the old file's record, back.
    private func failsAfterReplacingTheOldFile(_ start: Machine.Start, _ outcome: Machine.Outcome) -> Bool {
        if case .completed = outcome { return false }
        let previous = state.withLock { machine in
            machine.isCurrent(start.id, start.generation) ? machine.items[start.id]?.previous : nil
        }
        guard let previous, previous.announced else { return false }
        return folder.facts(start.name) != .file(size: previous.size)
    }

    /// The scheduler's time, in nanoseconds (0 before its origin).
    func now() -> UInt64 { Self.now(configuration.scheduler) }

    /// `scheduler`'s time, in nanoseconds (0 before its origin).
    static func now(_ scheduler: any JobScheduler) -> UInt64 {
        let (seconds, attoseconds) = scheduler.now.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ UInt64(max(attoseconds, 0) / 1_000_000_000)
    }
}
