import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `DownloadManager` end to end, with a control landing in the middle of its work every time
/// (through its test hooks).
@Suite struct DownloadManagerRaceTests {
    /// The manager, for hooks that act on it once it exists.
    final class ManagerBox: Sendable {
        private let box = LockedBox<DownloadManager?>.make(nil)
        /// What a hook saw, in order.
        private let seen = Watched<[String]>([])
        private let acted = LockedBox<Bool>.make(false)

        var manager: DownloadManager? {
            get { box.withLock { $0 } }
            set { box.withLock { $0 = newValue } }
        }

        var notes: [String] { seen.current }

        func note(_ text: String) { seen.withLock { $0.append(text) } }

        /// Suspends until a hook noted something, resumed by its note.
        func untilNoted(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) async {
            await seen.until(what, sourceLocation: sourceLocation) { !$0.isEmpty }
        }

        /// From inside one of the manager's steps (a hook): makes `call` on a thread of its own, and
        /// waits until it is blocked on the manager (`blocked`, read from its state) or has returned
        /// (`returned` is set then), for at most `safetyDeadline`; notes "`what` waits" or "`what`
        /// returned".
        func race(
            _ what: String, returned: Watched<Bool> = Watched(false), blocked: @escaping @Sendable () -> Bool,
            _ call: @escaping @Sendable () -> Void
        ) {
            Thread {
                call()
                returned.withLock { $0 = true }
            }.start()
            let clock = ContinuousClock()
            let deadline = clock.now + safetyDeadline
            while !returned.current, !blocked(), clock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
            note(returned.current ? "\(what) returned" : "\(what) waits")
        }

        /// True the first time only.
        func once() -> Bool {
            acted.withLock { acted in
                defer { acted = true }
                return !acted
            }
        }
    }

    @Test func anItemResumedAsItsCancelledPartIsAboutToBeUnlinkedStartsAfterTheUnlink() async throws {
        let bytes = pattern(100_000)
        let release = Gate()
        defer { release.open() }
        let server = try ScriptedServer { _, index in
            index == 0 ? .stall(body: bytes, sent: 40_000, until: release) : .respond(200, body: bytes)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        var configuration = testConfiguration(log, maxConcurrent: 2)
        configuration.testHooks.beforeUnlink = { paths in
            guard paths.contains(where: { $0.hasSuffix("a.bin.part") }), box.once(), let manager = box.manager,
                let id = manager.items.first?.id
            else { return }
            try? manager.resume(id)
            box.note(manager.item(id)?.state.name ?? "gone")
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        box.manager = manager
        let id = try manager.add(server.url("a.bin"))
        await manager.until("a has bytes", item: id) { $0.progress.received == 40_000 }
        #expect(fileSize(folder.appendingPathComponent("a.bin.part")) == 40_000)

        try manager.cancel(id)

        #expect(box.notes == ["pending"], "resumed between the decision and the unlink, it waits for the unlink")
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.map(\.id) == [id])
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == bytes)
        manager.close()
    }

    /// `add` checks its requests, writes their records, then commits: a `remove` of an item a request
    /// names, made in between, would have it return the id of a removed item, and its requeue lost.
    /// The remove waits for the add's commit (both take the journal's pen), so it comes after.
    @Test func aRemoveDuringAnAddComesAfterItsCommitSoTheAddNeverReturnsARemovedItem() async throws {
        let release = Gate()
        defer { release.open() }
        let server = try ScriptedServer { _, _ in .stall(body: pattern(1000), sent: 10, until: release) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        // The item the hook removes, once armed.
        let target = LockedBox<DownloadManager.ItemID?>.make(nil)
        var configuration = testConfiguration(log, maxConcurrent: 1)
        configuration.testHooks.journalFailure = {
            // The add's synced write of its new record: between its checks and its commit.
            guard let id = target.withLock({ $0 }), box.once(), let manager = box.manager else { return nil }
            box.race("remove", blocked: { manager.state.withLock { $0.pen.waitingCount > 0 } }) {
                try? manager.remove(id)
            }
            return nil
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        box.manager = manager
        let a = try manager.add(server.url("a.bin"))
        await log.wait(for: a, toBe: .running)
        try manager.cancel(a)
        await log.wait(for: a, toBe: .cancelled)
        target.withLock { $0 = a }

        let ids = try manager.add(contentsOf: [.init(url: server.url("a.bin")), .init(url: server.url("b.bin"))])

        #expect(ids.first == a)
        #expect(box.notes == ["remove waits"])
        // What the updates tell of `a`, in order.
        let told = { @Sendable (updates: [DownloadManager.Update]) -> [String] in
            updates.flatMap(\.events).compactMap { event in
                switch event {
                case .changed(let item) where item.id == a: item.state.name
                case .removed(let item) where item.id == a: "removed"
                default: nil
                }
            }
        }
        await log.wait(until: { told($0).last == "removed" })
        // The add queued `a` again (it may have started since), then the remove took it: never the
        // other way round.
        let sinceCancel = told(log.all).reversed().prefix { $0 != "cancelled" }.reversed()
        #expect(sinceCancel.first == "pending")
        #expect(sinceCancel.last == "removed")
        manager.close()
    }

    /// A `close()` that comes while an `add` writes its records waits for the `add`'s commit: the
    /// summary it gives the waiters has the item the `add` returned, not committed onto a closed
    /// manager after it.
    @Test func aCloseDuringAnAddWaitsForItsCommit() async throws {
        let release = Gate()
        defer { release.open() }
        let server = try ScriptedServer { _, _ in .stall(body: pattern(1000), sent: 10, until: release) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        let armed = LockedBox<Bool>.make(false)
        var configuration = testConfiguration(log)
        configuration.testHooks.journalFailure = {
            guard armed.withLock({ $0 }), box.once(), let manager = box.manager else { return nil }
            box.race("close", blocked: { manager.state.withLock { $0.pen.waitingCount > 0 } }) { manager.close() }
            return nil
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        box.manager = manager
        let a = try manager.add(server.url("a.bin"))
        await manager.until("a runs", item: a) { $0.state == .running }
        let waiter = Task { await manager.waitUntilFinished() }
        // The wait is registered (nothing tells of it but the state machine).
        let clock = ContinuousClock()
        let deadline = clock.now + safetyDeadline
        while manager.state.withLock({ $0.waiters.count == 0 }), clock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        armed.withLock { $0 = true }

        let b = try manager.add(server.url("b.bin"))

        #expect(box.notes == ["close waits"])
        let summary = await waiter.value
        #expect(summary.items.map(\.id) == [a, b], "the closing summary has every item an add returned")
    }

    /// Unlinks a journal write allowed are done by the thread that made the change, once it gave the
    /// journal's pen back: a `close()` meanwhile waits for them, so that no unlink comes after it returns.
    @Test func aCloseWaitsForTheUnlinksAWriteAllowed() async throws {
        let release = Gate()
        defer { release.open() }
        let server = try ScriptedServer { _, _ in .stall(body: pattern(1000), sent: 100, until: release) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        let closeReturned = Watched(false)
        var configuration = testConfiguration(log)
        configuration.testHooks.beforeUnlink = { paths in
            guard paths.contains("a.bin.part"), box.once(), let manager = box.manager else { return }
            box.race("close", returned: closeReturned, blocked: { manager.state.withLock { $0.pen.awaitsUnlinks } }) {
                manager.close()
            }
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        box.manager = manager
        let id = try manager.add(server.url("a.bin"))
        await manager.until("a has bytes", item: id) { $0.progress.received == 100 }

        try manager.cancel(id)

        #expect(box.notes == ["close waits"])
        await closeReturned.until("close returned") { $0 }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("a.bin.part").path))
    }

    @Test func anItemResumedBeforeItsSuspendedRunIsCancelledWaitsForThatRun() async throws {
        // A resume between the suspend's decision and its cancel: the suspended run still holds
        // the `.part`. The new run waits for it to end, instead of failing with "another download
        // to it is running".
        let bytes = pattern(200_000)
        let release = Gate()
        defer { release.open() }
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart {
                return .respond(
                    206, headers: ["ETag": "\"r\"", "Content-Range": "bytes \(start)-199999/200000"],
                    body: bytes.dropFirst(start))
            }
            return .stall(body: bytes, sent: 50_000, until: release, headers: ["ETag": "\"r\""])
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        var configuration = testConfiguration(log)
        configuration.testHooks.beforeCancel = {
            guard box.once(), let manager = box.manager, let id = manager.items.first?.id else { return }
            try? manager.resume(id)
            // A start is claimed under the manager's lock, in `resume` itself: "running" here would
            // be a run racing the suspended one for the `.part`.
            box.note(manager.item(id)?.state.name ?? "gone")
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        box.manager = manager
        let id = try manager.add(server.url("r.bin"))
        await manager.until("r has bytes", item: id) { $0.progress.received == 50_000 }
        #expect(fileSize(folder.appendingPathComponent("r.bin.part")) == 50_000)

        try manager.suspend(id)
        let summary = await manager.waitUntilFinished()

        #expect(box.notes == ["pending"])
        #expect(!log.states(of: id).contains { $0.isFailed }, "\(log.states(of: id).compactMap(\.failure))")
        #expect(summary.completed.map(\.id) == [id])
        #expect(try Data(contentsOf: folder.appendingPathComponent("r.bin")) == bytes)
        #expect(server.requests.last?.headers["range"] == "bytes=50000-", "resumed where the part ends")
    }

    @Test func aRemovalIsInTheJournalBeforeItsFilesAreUnlinked() async throws {
        // Killed between the two, the next manager must not bring the item back.
        let bytes = pattern(100_000)
        let release = Gate()
        defer { release.open() }
        let server = try ScriptedServer { _, _ in .stall(body: bytes, sent: 30_000, until: release) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        var configuration = testConfiguration(log)
        let journal = folder.appendingPathComponent(".jobkit-downloads.journal")
        configuration.testHooks.beforeUnlink = { paths in
            let text = (try? String(contentsOf: journal, encoding: .utf8)) ?? ""
            box.note(text.contains("\"op\":\"remove\"") ? "journaled" : "not journaled")
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(server.url("x.bin"))
        await manager.until("x has bytes", item: id) { $0.progress.received == 30_000 }
        #expect(fileSize(folder.appendingPathComponent("x.bin.part")) == 30_000)

        try manager.remove(id)

        #expect(box.notes.first == "journaled")
        // The remove unlinks the `.part` itself, once its record is written: gone when it returns.
        #expect(!exists(folder.appendingPathComponent("x.bin.part")))
    }

    @Test func aCancelOnceTheFileIsTakingItsNameIsTooLateAndTheItemCompletes() async throws {
        let bytes = pattern(50_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        var configuration = testConfiguration(log)
        configuration.testHooks.afterFinishing = { id in
            guard let manager = box.manager else { return }
            try? manager.cancel(id)
            box.note(manager.item(id)?.state.name ?? "gone")
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        box.manager = manager

        let id = try manager.add(server.url("a.bin"))

        let summary = await manager.waitUntilFinished()
        #expect(box.notes == ["running"])
        #expect(summary.completed.map(\.id) == [id])
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == bytes)
        await log.waitForDrain()
        #expect(!log.states(of: id).contains(.cancelled))
        manager.close()
    }

    @Test func aRemoveOnceTheFileIsTakingItsNameDeletesItAfterAndTheNameCanBeAddedAgain() async throws {
        let bytes = pattern(50_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let box = ManagerBox()
        let url = server.url("a.bin")
        var configuration = testConfiguration(log)
        configuration.testHooks.afterFinishing = { id in
            guard box.once(), let manager = box.manager else { return }
            do {
                try manager.remove(id, deletingFile: true)
                let again = try manager.add(url)
                box.note(manager.item(again)?.state.name ?? "gone")
            } catch {
                box.note("\(error)")
            }
        }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        box.manager = manager

        let first = try manager.add(url)
        await log.wait(until: { $0.flatMap(\.events).contains { if case .removed = $0 { true } else { false } } })
        // The hook removes, then adds: between the two the manager is idle, and on a slow machine (the
        // sanitizer, tests side by side) `waitUntilFinished` could return there, before the add.
        await box.untilNoted("the hook added the name again")

        let summary = await manager.waitUntilFinished()
        #expect(box.notes == ["pending"], "the new item waits for the removed one's file to go")
        #expect(summary.items.count == 1)
        #expect(summary.completed.map(\.id) != [first])
        #expect(summary.completed.count == 1, "not fileInTheWay: \(summary.items.map(\.state))")
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == bytes)
        #expect(!exists(folder.appendingPathComponent("a.bin.part")))
        #expect(server.requests.count == 2)
        manager.close()
    }
}
