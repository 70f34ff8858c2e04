import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What comes from outside — a journal in the folder, a server's numbers, a file that appears — is
/// input to validate, never truth to act on.
@Suite(.timeLimit(.minutes(10))) struct DownloadManagerTrustTests {
    /// A journal with `records` (JSON lines after the header) in `folder`.
    private func plantJournal(in folder: URL, _ records: [String]) throws {
        let text = ([#"{"format":"jobkit-downloads","next":9,"version":1}"#] + records).joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: folder.appendingPathComponent(".jobkit-downloads.journal"))
    }

    private func configuration(_ log: UpdateLog) -> DownloadManager.Configuration {
        testConfiguration(log)
    }

    private func failure(of id: DownloadManager.ItemID, in manager: DownloadManager) -> DownloadManager.ItemError? {
        if case .failed(let failure) = manager.item(id)?.state { return failure }
        return nil
    }

    @Test func aPlantedJournalNeverReachesOutsideTheFolderNorReplacesAFileInIt() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(1000)) }
        defer { server.stop() }
        let root = try scratchFolder()
        let folder = root.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let outside = root.appendingPathComponent("escaped")
        try Data("outside".utf8).write(to: outside)
        let victim = folder.appendingPathComponent("README.md")
        try Data("mine".utf8).write(to: victim)
        let url = server.url("file").absoluteString
        try plantJournal(
            in: folder,
            [
                #"{"id":1,"name":"../escaped","op":"add","url":"\#(url)"}"#,
                #"{"id":1,"op":"finishing","size":0}"#,
                #"{"id":1,"op":"state","state":"pending"}"#,
                #"{"id":2,"name":"README.md","op":"add","url":"\#(url)"}"#,
                #"{"id":2,"op":"finishing","size":0}"#,
                #"{"id":2,"op":"state","state":"pending"}"#,
                #"{"id":3,"name":"x","op":"add","url":"file:///etc/passwd"}"#,
                #"{"id":4,"name":"README.md","op":"add","url":"\#(url)"}"#,
                #"{"id":5,"name":"big","op":"add","url":"\#(url)"}"#,
                #"{"id":5,"op":"done","size":5000000000000000000}"#,
            ])
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }

        #expect(manager.journalProblems.count == 4, "\(manager.journalProblems)")
        #expect(manager.journalProblems.first?.hasPrefix("line 2: item 1 was dropped: invalid file name") == true)
        #expect(manager.journalProblems.contains { $0.hasPrefix("line 8:") && $0.contains("no http(s) URL") })
        #expect(
            manager.journalProblems.contains { $0.hasPrefix("line 9:") && $0.contains("name 'README.md' of item 2") })
        #expect(manager.journalProblems.contains { $0.hasPrefix("line 11:") && $0.contains("out of range") })
        let summary = await manager.waitUntilFinished()
        #expect(summary.items.map(\.name) == ["README.md", "big"])
        #expect(failure(of: DownloadManager.ItemID(rawValue: 2), in: manager)?.kind == .fileInTheWay)
        #expect(try Data(contentsOf: outside) == Data("outside".utf8), "nothing outside the folder is touched")
        #expect(try Data(contentsOf: victim) == Data("mine".utf8), "the journal's word is no proof of ownership")
        let id = try manager.add(server.url("new.bin"))
        _ = await manager.waitUntilFinished()
        #expect(manager.item(id)?.state == .completed)
    }

    @Test func absurdLengthsFailTheItemsAndTotalsNeverTrap() async throws {
        let server = try ScriptedServer { request, _ in
            request.path.hasSuffix("range")
                ? .respond(206, headers: ["Content-Range": "bytes 0-9/9000000000000000000"], body: pattern(10))
                : .respond(200, headers: ["Content-Length": "5000000000000000000"], body: pattern(10))
        }
        defer { server.stop() }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: configuration(log), resultQueue: log.queue,
            onUpdate: log.handler)
        defer { manager.close() }
        let ids = try manager.add(contentsOf: ["a", "b", "range"].map { .init(url: server.url($0)) })
        let summary = await manager.waitUntilFinished()
        for id in ids {
            let failed = try #require(failure(of: id, in: manager), "\(String(describing: manager.item(id)))")
            #expect(failed.kind == .network, "\(failed.message)")
        }
        #expect(failure(of: ids[0], in: manager)?.message.contains("Content-Length of '5000000000000000000'") == true)
        #expect(summary.totals.failed == 3 && summary.totals.expected >= 0)
    }

    @Test func totalsSaturateInsteadOfOverflowing() throws {
        var machine = DownloadManagerStateMachine<Int>(
            directory: URL(fileURLWithPath: "/downloads"), limit: 4, perHost: nil, interval: .zero, window: .seconds(1))
        let prepared = try machine.prepare(
            ["a", "b"].map { .init(url: URL(string: "https://example.com/\($0)")!) })
        let (ids, actions) = machine.commit(prepared, now: 0)
        for (id, start) in zip(ids, actions.starts) {
            _ = machine.began(id, generation: start.generation, offset: 0, total: .max - 1, now: 1)
            _ = machine.received(id, generation: start.generation, count: .max, now: 1)
        }
        let totals = machine.summary(now: 2).totals
        #expect(totals.expected == .max && totals.received == .max)
    }

    @Test func aFileThatAppearsUnderTheNameWhileItDownloadsIsNeverReplaced() async throws {
        let bytes = pattern(100_000)
        let gate = Gate()
        let server = try ScriptedServer { _, _ in .stall(body: bytes, sent: 50_000, until: gate) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(server.url("holiday.mov"))
        let part = folder.appendingPathComponent("holiday.mov.part")
        await manager.until("half of it arrived", item: id) { $0.progress.received == 50_000 }
        #expect(fileSize(part) == 50_000)
        try Data("mine\n".utf8).write(to: folder.appendingPathComponent("holiday.mov"))
        gate.open()
        _ = await manager.waitUntilFinished()

        #expect(failure(of: id, in: manager)?.kind == .fileInTheWay)
        #expect(try Data(contentsOf: folder.appendingPathComponent("holiday.mov")) == Data("mine\n".utf8))
        #expect(try Data(contentsOf: part) == bytes, "the complete download stays in its .part")
    }

    @Test func aDownloadToAnExistingFileFailsBeforeAnyRequestAndLeavesIt() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(10)) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("kept.txt")
        try Data("mine".utf8).write(to: destination)
        let result = await outcome(of: Job<URL>.download(from: server.url("kept.txt"), to: destination))
        #expect((result.failureError as? DownloadError)?.kind == .destinationExists)
        #expect(try Data(contentsOf: destination) == Data("mine".utf8))
        #expect(server.requests.isEmpty)
    }

    @Test func aFolderThatAppearsUnderTheNameFailsTheItemAndStays() async throws {
        let gate = Gate()
        let server = try ScriptedServer { _, _ in .stall(body: pattern(20_000), sent: 10_000, until: gate) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(server.url("x.bin"))
        await manager.until("it started", item: id) { $0.progress.received == 10_000 }
        #expect(fileSize(folder.appendingPathComponent("x.bin.part")) == 10_000)
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("x.bin/inner"), withIntermediateDirectories: true)
        gate.open()
        _ = await manager.waitUntilFinished()
        #expect(failure(of: id, in: manager) != nil)
        #expect(exists(folder.appendingPathComponent("x.bin/inner")))
    }

    @Test func replacingAnExistingFileIsOnlyWhatTheRequestAsksFor() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(500)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        try Data("old".utf8).write(to: folder.appendingPathComponent("a.bin"))
        try Data("old".utf8).write(to: folder.appendingPathComponent("b.bin"))
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let ids = try manager.add(contentsOf: [
            .init(url: server.url("a.bin")), .init(url: server.url("b.bin"), replacesExistingFile: true),
        ])
        _ = await manager.waitUntilFinished()
        #expect(failure(of: ids[0], in: manager)?.kind == .fileInTheWay)
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == Data("old".utf8))
        #expect(manager.item(ids[1])?.state == .completed)
        #expect(try Data(contentsOf: folder.appendingPathComponent("b.bin")) == pattern(500))
    }

    @Test func aHardLinkedOrSpecialPartIsNeverWrittenThrough() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(100)) }
        defer { server.stop() }
        let root = try scratchFolder()
        let folder = root.appendingPathComponent("d")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let outside = root.appendingPathComponent("outside")
        try Data("outside bytes".utf8).write(to: outside)
        #expect(link(outside.path, folder.appendingPathComponent("f.bin.part").path) == 0)
        #expect(mkfifo(folder.appendingPathComponent("g.bin.part.meta").path, 0o600) == 0)
        #expect(mkfifo(folder.appendingPathComponent("h.bin.part").path, 0o600) == 0)

        for name in ["f.bin", "g.bin", "h.bin"] {
            let destination = folder.appendingPathComponent(name)
            _ = await outcome(of: Job<URL>.download(from: server.url(name), to: destination))
        }

        #expect(try Data(contentsOf: outside) == Data("outside bytes".utf8), "never written through a hard link")
        #expect(try Data(contentsOf: folder.appendingPathComponent("g.bin")) == pattern(100), "a FIFO is no metadata")
        #expect(!exists(folder.appendingPathComponent("h.bin")))
        let journalLink = folder.appendingPathComponent(".jobkit-downloads.journal")
        try FileManager.default.removeItem(at: folder.appendingPathComponent("f.bin.part"))
        chmod(outside.path, 0o644)
        #expect(link(outside.path, journalLink.path) == 0)
        #expect(throws: DownloadManagerError.self) { try DownloadManager(directory: folder) }
        var info = stat()
        #expect(stat(outside.path, &info) == 0 && info.st_mode & 0o777 == 0o644, "its mode is not changed either")
    }

    @Test func aJournalAtTheIdLimitTakesNoMoreItemsAndStaysReadable() throws {
        let folder = try scratchFolder()
        let text = #"{"format":"jobkit-downloads","next":4611686018427387904,"version":1}"# + "\n"
        try Data(text.utf8).write(to: folder.appendingPathComponent(".jobkit-downloads.journal"))
        let manager = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        #expect(throws: DownloadManagerError.self) { try manager.add(URL(string: "http://127.0.0.1:9/a")!) }
        manager.close()
        let reopened = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        reopened.close()
    }

    @Test func lengthsPastInt64AndGarbage416RangesAreNotBelieved() async throws {
        let bytes = pattern(50)
        let server = try ScriptedServer { request, _ in
            switch request.path {
            case "/huge":
                let head = "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\nConnection: close\r\n\r\n"
                return .raw(Data(head.utf8) + bytes)
            default:
                return request.rangeStart != nil
                    ? .respond(416, headers: ["Content-Range": "bytes */garbage"])
                    : .respond(200, headers: ["ETag": "\"e\""], body: pattern(60))
            }
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let huge = await outcome(
            of: Job<URL>.download(from: server.url("huge"), to: folder.appendingPathComponent("huge")))
        #expect("\(huge.failureError.map { "\($0)" } ?? "")".contains("Content-Length"))

        let destination = folder.appendingPathComponent("resumed")
        try leavePart(bytes, of: server.url("resumed"), at: destination, etag: "\"e\"", total: 50)
        _ = try await Job<URL>.download(from: server.url("resumed"), to: destination).value
        #expect(try Data(contentsOf: destination) == pattern(60), "started over, not declared complete")
    }

    // MARK: Journal first

    @Test func aJournalThatCannotBeWrittenUnlinksNothingAndFailsTheCaller() async throws {
        let gate = Gate()
        let server = try ScriptedServer { _, _ in .stall(body: pattern(40_000), sent: 20_000, until: gate) }
        defer {
            gate.open()
            server.stop()
        }
        let folder = try scratchFolder()
        let full = LockedBox<Bool>.make(false)
        let log = UpdateLog()
        var configuration = configuration(log)
        configuration.testHooks.journalFailure = { full.withLock { $0 } ? ENOSPC : nil }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        let id = try manager.add(server.url("a.bin"))
        let part = folder.appendingPathComponent("a.bin.part")
        await manager.until("it has bytes", item: id) { $0.progress.received == 20_000 }
        #expect(fileSize(part) == 20_000)

        full.withLock { $0 = true }
        #expect(throws: DownloadManagerError.self) { try manager.remove(id) }
        #expect(exists(part), "no unlink before the journal says why")
        #expect(throws: DownloadManagerError.self) { try manager.add(server.url("b.bin")) }
        #expect(manager.items.isEmpty, "a failed add adds nothing")

        full.withLock { $0 = false }
        manager.close()
        #expect(!exists(part), "once the journal could be written, the owed unlink is done")
        let reopened = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        defer { reopened.close() }
        #expect(reopened.items.isEmpty, "neither the removed item nor the failed add comes back")
    }

    @Test func anItemWaitingForAnOwedUnlinkStartsOnceTheDiskRecoversWithNoOtherCall() async throws {
        // Found by the simulation: a remove whose record failed owes its unlinks; an item added under
        // the same name waits for them. Its own add writes the journal, and used to leave the unlinks
        // owed: the item stayed pending until some other call happened to write a record.
        let gate = Gate()
        let server = try ScriptedServer { request, _ in
            request.path.hasSuffix("first")
                ? .stall(body: pattern(40_000), sent: 20_000, until: gate) : .respond(200, body: pattern(500))
        }
        defer {
            gate.open()
            server.stop()
        }
        let folder = try scratchFolder()
        let full = LockedBox<Bool>.make(false)
        let log = UpdateLog()
        var configuration = configuration(log)
        configuration.testHooks.journalFailure = { full.withLock { $0 } ? ENOSPC : nil }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let first = try manager.add(server.url("first"), name: "a.bin")
        await manager.until("it has bytes", item: first) { $0.progress.received == 20_000 }
        #expect(fileSize(folder.appendingPathComponent("a.bin.part")) == 20_000)
        full.withLock { $0 = true }
        #expect(throws: DownloadManagerError.self) { try manager.remove(first) }
        full.withLock { $0 = false }
        let second = try manager.add(server.url("second"), name: "a.bin")
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.map(\.id) == [second])
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == pattern(500))
    }

    /// On a file system in memory, a scripted transport and a test scheduler: the disk refuses the
    /// `remove` record once, and the retry a second later writes it and does the unlink it owed.
    @Test func aFailedJournalWriteIsTriedAgainUntilTheDiskRecovers() async throws {
        let world = MemoryDownloads(bytes: pattern(100))
        let manager = try world.open()
        defer { manager.close() }
        let id = try manager.add(world.url)
        _ = await manager.waitUntilFinished()
        world.disk.fail(.write, name: DownloadJournal.fileName, with: ENOSPC)
        #expect(throws: DownloadManagerError.self) { try manager.remove(id, deletingFile: true) }
        #expect(world.contents(of: "big.bin") != nil, "nothing unlinked before the journal says why")
        #expect(world.scheduler.scheduledDelays.contains(DownloadManager.journalRetryDelay), "the retry is scheduled")
        world.scheduler.advance(by: DownloadManager.journalRetryDelay)
        // The retry runs on the manager's queue: its unlink is an operation on the disk.
        await world.until("the retry wrote the record and did the unlink", file: "big.bin") { $0 == nil }
        #expect(
            world.contents(of: DownloadJournal.fileName).map { String(decoding: $0, as: UTF8.self) }?.contains(
                #""op":"remove""#) == true)
    }

    @Test func aFileRemovedAsItTakesItsNameIsUnlinkedOnlyOnceTheRemoveIsRecorded() async throws {
        // Found by review: `remove(deletingFile: true)` of an item whose file is taking its name leaves
        // the unlink to the run's end; with the `remove` record unwritten (a full disk), that end
        // unlinked the completed file with no write tried first, and after a crash the item came
        // back and downloaded again.
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(5_000)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let journal = folder.appendingPathComponent(".jobkit-downloads.journal")
        let full = LockedBox<Bool>.make(false)
        let manager = LockedBox<DownloadManager?>.make(nil)
        let unlinks = LockedBox<[(names: [String], recorded: Bool)]>.make([])
        let log = UpdateLog()
        var configuration = configuration(log)
        configuration.testHooks.journalFailure = { full.withLock { $0 } ? ENOSPC : nil }
        configuration.testHooks.afterFinishing = { id in
            full.withLock { $0 = true }
            _ = try? manager.withLock { $0 }?.remove(id, deletingFile: true)  // its record fails
            full.withLock { $0 = false }  // the disk recovers before the run ends
        }
        configuration.testHooks.beforeUnlink = { names in
            let text = (try? String(contentsOf: journal, encoding: .utf8)) ?? ""
            unlinks.withLock { $0.append((names, text.contains(#""op":"remove""#))) }
        }
        let opened = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        manager.withLock { $0 = opened }
        _ = try opened.add(server.url("a.bin"))
        _ = await opened.waitUntilFinished()
        #expect(!unlinks.withLock { $0 }.contains { $0.names.contains("a.bin") && !$0.recorded })
        opened.abandonForTesting()  // as a crash
        full.withLock { $0 = false }
        let reopened = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        defer { reopened.close() }
        let back = reopened.items.filter { $0.name == "a.bin" }
        #expect(back.isEmpty || exists(folder.appendingPathComponent("a.bin")), "never back with its file gone")
    }

    /// On a file system in memory, a scripted transport (holding the body half-way, as a stalled
    /// server) and a test scheduler: the disk refuses the `suspend` record once, and the retry a
    /// second later writes it with no other call.
    @Test func aFailedRecordIsWrittenOnceTheDiskRecoversWithNoOtherCall() async throws {
        let world = MemoryDownloads(bytes: pattern(40_000), holdAt: 20_000)
        let manager = try world.open()
        defer { manager.close() }
        let id = try manager.add(world.url)
        await world.transport.untilHolding(0)
        #expect(world.contents(of: "big.bin.part")?.count == 20_000, "it has bytes")
        world.disk.fail(.write, name: DownloadJournal.fileName, with: ENOSPC)
        #expect(throws: DownloadManagerError.self) { try manager.suspend(id) }
        #expect(world.scheduler.scheduledDelays.contains(DownloadManager.journalRetryDelay), "the retry is scheduled")
        world.scheduler.advance(by: DownloadManager.journalRetryDelay)
        await world.until("the retry wrote the suspend record", file: DownloadJournal.fileName) { journal in
            journal.map { String(decoding: $0, as: UTF8.self) }?.contains("suspended") == true
        }
    }

    @Test func anAddWhoseSyncFailsLeavesNoRecordARestartHonours() throws {
        let folder = try scratchFolder()
        // Once armed: the append goes through, its sync fails.
        let calls = LockedBox<Int?>.make(nil)
        var configuration = DownloadManager.Configuration(durability: .system)
        configuration.testHooks.journalFailure = {
            calls.withLock { count -> Int32? in
                guard let done = count else { return nil }
                count = done + 1
                return done == 1 ? EIO : nil
            }
        }
        let manager = try DownloadManager(directory: folder, configuration: configuration)
        calls.withLock { $0 = 0 }
        #expect(throws: DownloadManagerError.self) { try manager.add(URL(string: "http://127.0.0.1:9/a.bin")!) }
        #expect(manager.items.isEmpty)
        manager.abandonForTesting()  // as a crash: nothing compacted from memory
        let reopened = try DownloadManager(
            directory: folder, configuration: DownloadManager.Configuration())
        defer { reopened.close() }
        #expect(reopened.items.isEmpty, "the add threw: a restart does not honour its record")
    }

    @Test func aFinishWhoseRecordCannotBeWrittenKeepsThePartAndDoesNotRename() async throws {
        let gate = Gate()
        let server = try ScriptedServer { _, _ in .stall(body: pattern(3000), sent: 1000, until: gate) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let full = LockedBox<Bool>.make(false)
        let log = UpdateLog()
        var configuration = configuration(log)
        configuration.testHooks.journalFailure = { full.withLock { $0 } ? ENOSPC : nil }
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(server.url("a.bin"))
        await manager.until("it started", item: id) { $0.progress.received == 1000 }
        #expect(fileSize(folder.appendingPathComponent("a.bin.part")) == 1000)
        full.withLock { $0 = true }
        gate.open()
        _ = await manager.waitUntilFinished()
        #expect(failure(of: id, in: manager) != nil)
        #expect(!exists(folder.appendingPathComponent("a.bin")), "no rename without its record")
        #expect(fileSize(folder.appendingPathComponent("a.bin.part")) == 3000)
    }

    // MARK: Restoring

    @Test func aRestoreRemovesThePartsOfRemovedAndCancelledItemsOnly() throws {
        let folder = try scratchFolder()
        let url = "http://127.0.0.1:9/"
        try plantJournal(
            in: folder,
            [
                #"{"id":1,"name":"a.bin","op":"add","url":"\#(url)a.bin"}"#,
                #"{"id":1,"op":"remove"}"#,
                #"{"id":2,"name":"b.bin","op":"add","url":"\#(url)b.bin"}"#,
                #"{"id":2,"op":"state","state":"cancelled"}"#,
                #"{"id":3,"name":"c.bin","op":"add","url":"\#(url)c.bin"}"#,
                #"{"id":4,"name":"d.bin","op":"add","url":"\#(url)d.bin"}"#,
                #"{"id":4,"op":"remove"}"#,
                #"{"id":5,"name":"d.bin","op":"add","url":"\#(url)d2.bin"}"#,
            ])
        for name in ["a.bin", "b.bin", "c.bin", "d.bin"] {
            try Data("part".utf8).write(to: folder.appendingPathComponent(name + ".part"))
            try Data("{}".utf8).write(to: folder.appendingPathComponent(name + ".part.meta"))
        }
        try Data("stranger".utf8).write(to: folder.appendingPathComponent("z.bin.part"))
        var configuration = DownloadManager.Configuration()
        configuration.startsRestoredItems = false
        let manager = try DownloadManager(directory: folder, configuration: configuration)
        defer { manager.close() }

        for name in ["a.bin", "b.bin"] {
            #expect(!exists(folder.appendingPathComponent(name + ".part")), "\(name)")
            #expect(!exists(folder.appendingPathComponent(name + ".part.meta")), "\(name)")
        }
        #expect(exists(folder.appendingPathComponent("c.bin.part")), "a pending item keeps its .part")
        #expect(exists(folder.appendingPathComponent("d.bin.part")), "the name is another item's again")
        #expect(exists(folder.appendingPathComponent("z.bin.part")), "a .part the journal never named stays")
    }

    @Test func restoredItemsWaitWhenToldAndTheJournalKeepsThemPending() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(700)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let url = server.url("old.bin").absoluteString
        try plantJournal(in: folder, [#"{"id":1,"name":"old.bin","op":"add","url":"\#(url)"}"#])
        let log = UpdateLog()
        var configuration = configuration(log)
        configuration.startsRestoredItems = false
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        #expect(manager.items.map(\.state) == [.suspended])
        let other = try manager.add(server.url("new.bin"))
        _ = await manager.waitUntilFinished()
        #expect(manager.item(other)?.state == .completed)
        #expect(server.requests.map(\.path) == ["/new.bin"], "the restored item did not run")
        manager.close()
        let journal = try String(
            contentsOf: folder.appendingPathComponent(".jobkit-downloads.journal"), encoding: .utf8)
        #expect(!journal.contains("suspended"), "the journal still says pending: \(journal)")

        let again = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        defer { again.close() }
        let id = try again.add(URL(string: url)!)
        #expect(id.rawValue == 1, "the same request is the held item, queued again")
        _ = await again.waitUntilFinished()
        #expect(again.item(id)?.state == .completed)
    }

    // MARK: Names, modes, secrets

    @Test func namesUpTo255BytesDownloadWithSidecarsNamedApart() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(321)) }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let long = String(repeating: "é", count: 125) + ".bin"  // 254 bytes
        #expect(throws: DownloadManagerError.self) {
            try manager.add(server.url("x"), name: String(repeating: "a", count: 256))
        }
        #expect(throws: DownloadManagerError.self) { try manager.add(server.url("x"), name: ".jobkit-part-1.part") }
        let id = try manager.add(server.url("x"), name: long)
        _ = await manager.waitUntilFinished()
        #expect(manager.item(id)?.state == .completed)
        #expect(try Data(contentsOf: folder.appendingPathComponent(long)) == pattern(321))
        #expect(PartNames(for: long).part.hasPrefix(".jobkit-part-") && PartNames(for: "a").part == "a.part")
    }

    @Test func theJournalAndMetadataArePrivate() async throws {
        let gate = Gate()
        let server = try ScriptedServer { _, _ in
            .stall(body: pattern(20_000), sent: 10_000, until: gate, headers: ["ETag": "\"v\""])
        }
        defer {
            gate.open()
            server.stop()
        }
        let folder = try scratchFolder()
        let journal = folder.appendingPathComponent(".jobkit-downloads.journal")
        try Data(#"{"format":"jobkit-downloads","next":1,"version":1}"#.utf8).write(to: journal)
        chmod(journal.path, 0o644)
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: configuration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let url = URL(string: "http://user:secret@127.0.0.1:\(server.port)/private.bin")!
        let id = try manager.add(url)
        let metadata = folder.appendingPathComponent("private.bin.part.meta")
        // Written with the response, before the first byte.
        await manager.until("the first bytes arrived", item: id) { $0.progress.received == 10_000 }
        #expect(exists(metadata), "the metadata is written")
        #expect(mode(of: journal) == 0o600)
        #expect(mode(of: metadata) == 0o600)
        let response = try #require(HTTPURLResponse(url: url, statusCode: 404, httpVersion: nil, headerFields: [:]))
        #expect(!HTTPStatusError(HTTPReply(response, body: Data())).localizedDescription.contains("secret"))
        #expect(url.redactedString == "http://127.0.0.1:\(server.port)/private.bin")
    }

    private func mode(of url: URL) -> mode_t {
        var info = stat()
        return stat(url.path, &info) == 0 ? info.st_mode & 0o777 : 0
    }
}
