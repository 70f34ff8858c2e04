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
