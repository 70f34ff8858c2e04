import Dispatch
import Foundation
import JobKit
import JobKitServer
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `DownloadManager` end to end, on the loopback JobKit server and the scripted one.
@Suite struct DownloadManagerTests {
    @Test func twoHundredSmallAndFourLargeFilesArriveByteExact() async throws {
        try await withFixture { fixture in
            var expected: [String: Data] = [:]
            var requests: [DownloadManager.Request] = []
            for index in 0..<200 {
                let bytes = largePattern(16_384 + index * 97, seed: index)
                try bytes.write(to: fixture.root.appendingPathComponent("files/small\(index).bin"))
                expected["small\(index).bin"] = bytes
                requests.append(.init(url: fixture.url("files/small\(index).bin")))
            }
            for index in 0..<4 {
                let bytes = largePattern(12 << 20, seed: 1000 + index)
                try bytes.write(to: fixture.root.appendingPathComponent("files/large\(index).bin"))
                expected["large\(index).bin"] = bytes
                // One with a checksum: the large file is hashed once, after its last byte.
                let checksum = index == 0 ? Checksum.sha256(of: bytes) : nil
                requests.append(.init(url: fixture.url("files/large\(index).bin"), checksum: checksum))
            }
            let folder = try scratchFolder()
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: folder, configuration: testConfiguration(log, maxConcurrent: 8), resultQueue: log.queue,
                onUpdate: log.handler)

            let ids = try manager.add(contentsOf: requests)
            let summary = await manager.waitUntilFinished()

            #expect(ids.count == 204)
            #expect(summary.allSucceeded, "\(summary.failed.map(\.state))")
            #expect(summary.completed.count == 204)
            for (name, bytes) in expected {
                #expect(try Data(contentsOf: folder.appendingPathComponent(name)) == bytes, "\(name)")
            }
            let total = Int64(expected.values.reduce(0) { $0 + $1.count })
            #expect(summary.totals.received == total)
            #expect(summary.totals.expected == total)
            await log.waitForDrain()
            #expect(log.summaries.count == 1, "one notice when the queue drains")
            #expect(log.overlaps == 0)
            // Every item went pending → running → completed (the checked one through verifying).
            #expect(log.states(of: ids[0]) == [.pending, .running, .completed])
            #expect(log.states(of: ids[200]) == [.pending, .running, .verifying, .completed])
            // The notice comes after the last item's final state.
            #expect(log.events.last.map { if case .allFinished = $0 { true } else { false } } == true)
            // Progress arrived in bytes, never beyond the total.
            let running = log.all.flatMap(\.items).filter { $0.state == .running && $0.name == "large1.bin" }
            #expect(
                running.allSatisfy {
                    $0.progress.received <= 12 << 20 && ($0.progress.expected ?? 12 << 20) == 12 << 20
                })
            #expect(running.contains { $0.progress.expected == 12 << 20 && $0.progress.received > 0 })
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
                $0.hasSuffix(".part") || $0.hasSuffix(".meta")
            }
            #expect(leftovers.isEmpty)
            manager.close()
        }
    }

    @Test func progressCarriesBytesSpeedAndTimeRemaining() async throws {
        let bytes = pattern(400_000)
        let gate = Gate()
        let server = try ScriptedServer { _, _ in
            .stall(body: bytes, sent: 100_000, until: gate, headers: ["ETag": "\"p\""])
        }
        defer { server.stop() }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue,
            onUpdate: log.handler)
        let id = try manager.add(server.url("slow.bin"))

        await log.wait(until: { updates in
            updates.last?.items.first?.progress.received == 100_000 && (updates.last?.totals.bytesPerSecond ?? 0) > 0
        })
        let item = try #require(log.all.last?.items.first)
        #expect(item.id == id)
        #expect(item.state == .running)
        #expect(item.progress.expected == 400_000)
        #expect(item.progress.fraction == 0.25)
        #expect(item.progress.bytesPerSecond > 0)
        #expect((item.progress.secondsRemaining ?? -1) > 0)
        let totals = try #require(log.all.last?.totals)
        #expect(totals.received == 100_000)
        #expect(totals.expected == 400_000)
        #expect(totals.running == 1)
        gate.open()
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        manager.close()
    }

    /// The result queue is held busy by its first delivery until every item has ended: everything
    /// that happened meanwhile comes in one more delivery, merged, with every event in order. (Held
    /// by the test, not by a 150 ms sleep: how many deliveries a timed delay allows depends on how
    /// fast a loaded machine runs the downloads.)
    @Test func aBusyResultQueueGetsFewDeliveriesAndEveryEvent() async throws {
        try await withFixture { fixture in
            var requests: [DownloadManager.Request] = []
            for index in 0..<60 {
                try pattern(8_000, seed: index).write(to: fixture.root.appendingPathComponent("files/f\(index)"))
                requests.append(.init(url: fixture.url("files/f\(index)")))
            }
            let release = DispatchSemaphore(value: 0)
            let deliveries = LockedBox<Int>.make(0)
            let log = UpdateLog { _ in
                // The first delivery holds the result queue until the test releases it.
                if deliveries.withLock({ count in
                    count += 1
                    return count
                }) == 1 {
                    _ = wait(for: release)
                }
            }
            let manager = try DownloadManager(
                directory: try scratchFolder(), configuration: testConfiguration(log, maxConcurrent: 8),
                resultQueue: log.queue, onUpdate: log.handler)
            let ids = try manager.add(contentsOf: requests)
            _ = await manager.waitUntilFinished()
            release.signal()
            await log.waitForDrain()

            // 60 items × 3 states and the notice: the held delivery, then one with all the rest.
            #expect(log.all.count == 2, "\(log.all.count) deliveries")
            for id in ids { #expect(log.states(of: id) == [.pending, .running, .completed]) }
            #expect(log.summaries.count == 1)
            #expect(log.overlaps == 0)
            manager.close()
        }
    }

    @Test func suspendResumeCancelAndRemove() async throws {
        let bytes = pattern(300_000)
        let gates = LockedBox<[String: Gate]>.make([:])
        @Sendable func gate(_ path: String) -> Gate {
            gates.withLock { gates in
                if let gate = gates[path] { return gate }
                let gate = Gate()
                gates[path] = gate
                return gate
            }
        }
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart {
                return .respond(
                    206, headers: ["ETag": "\"v\"", "Content-Range": "bytes \(start)-299999/300000"],
                    body: bytes.dropFirst(start))
            }
            return .stall(body: bytes, sent: 120_000, until: gate(request.path), headers: ["ETag": "\"v\""])
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log, maxConcurrent: 2), resultQueue: log.queue,
            onUpdate: log.handler)
        let a = try manager.add(server.url("a.bin"))
        let b = try manager.add(server.url("b.bin"))
        let c = try manager.add(server.url("c.bin"))
        let d = try manager.add(server.url("d.bin"))
        let part = { @Sendable (name: String) in folder.appendingPathComponent(name + ".part") }

        // a and b run (width 2); c and d wait.
        await manager.until("a and b have bytes") {
            $0.item(a)?.progress.received == 120_000 && $0.item(b)?.progress.received == 120_000
        }
        #expect(fileSize(part("a.bin")) == 120_000)
        #expect(fileSize(part("b.bin")) == 120_000)
        #expect(manager.item(c)?.state == .pending)

        // Suspending a running item keeps its .part and frees its slot: c starts.
        try manager.suspend(a)
        #expect(manager.item(a)?.state == .suspended)
        await log.wait(for: c, toBe: .running)
        #expect(fileSize(part("a.bin")) == 120_000)

        // Cancelling a running item removes its .part: d starts.
        await manager.until("c has bytes", item: c) { $0.progress.received == 120_000 }
        #expect(fileSize(part("c.bin")) == 120_000)
        try manager.cancel(c)
        #expect(manager.item(c)?.state == .cancelled)
        #expect(!exists(part("c.bin")))
        #expect(!exists(folder.appendingPathComponent("c.bin.part.meta")))
        await log.wait(for: d, toBe: .running)

        // Removing a running item forgets it and its .part.
        await manager.until("d has bytes", item: d) { $0.progress.received == 120_000 }
        #expect(fileSize(part("d.bin")) == 120_000)
        try manager.remove(d)
        #expect(manager.item(d) == nil)
        #expect(!exists(part("d.bin")))
        await log.wait(until: { updates in
            updates.flatMap(\.events).contains { if case .removed(let item) = $0 { item.id == d } else { false } }
        })
        #expect(throws: DownloadManagerError.unknownItem(d)) { try manager.resume(d) }

        // Resuming the suspended item continues its .part with a validated range.
        try manager.resume(a)
        gate("/b.bin").open()
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.map(\.id) == [a, b])
        #expect(summary.cancelled.map(\.id) == [c])
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == bytes)
        #expect(try Data(contentsOf: folder.appendingPathComponent("b.bin")) == bytes)
        let resumed = server.requests.filter { $0.path == "/a.bin" }
        #expect(resumed.map(\.headers["range"]) == [nil, "bytes=120000-"])
        #expect(resumed.last?.headers["if-range"] == "\"v\"")
        await log.waitForDrain()
        #expect(log.states(of: a) == [.pending, .running, .suspended, .pending, .running, .completed])

        // A cancelled item starts over when resumed.
        try manager.resume(c)
        gate("/c.bin").open()
        _ = await manager.waitUntilFinished()
        #expect(try Data(contentsOf: folder.appendingPathComponent("c.bin")) == bytes)
        manager.close()
    }

    @Test func suspendAllResumeAllAndCancelAll() async throws {
        let bytes = pattern(200_000)
        let gate = Gate()
        // Every answer is held until the end: a transfer is never cancelled as it ends (which
        // FoundationNetworking can trap on; see `RunningTransfer.cancel`).
        let server = try ScriptedServer { request, _ in
            if let start = request.rangeStart {
                let rest = ScriptedServer.Reply.respond(
                    206, headers: ["ETag": "\"v\"", "Content-Range": "bytes \(start)-199999/200000"],
                    body: bytes.dropFirst(start))
                return .waiting(for: gate, then: rest)
            }
            return .stall(body: bytes, sent: 50_000, until: gate, headers: ["ETag": "\"v\""])
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log, maxConcurrent: 2), resultQueue: log.queue,
            onUpdate: log.handler)
        let ids = try manager.add(contentsOf: (0..<4).map { .init(url: server.url("f\($0)")) })
        await manager.until("two run") { $0.totals.running == 2 }

        manager.suspendAll()
        #expect(manager.items.allSatisfy { $0.state == .suspended })
        await log.waitForDrain()
        #expect(await manager.waitUntilFinished().suspended.count == 4)

        manager.resumeAll()
        await manager.until("two run again") { $0.totals.running == 2 }
        manager.cancelAll()
        #expect(manager.items.allSatisfy { $0.state == .cancelled })
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".part") }
        #expect(leftovers.isEmpty)

        manager.removeAll()
        #expect(manager.items.isEmpty)
        #expect(throws: DownloadManagerError.unknownItem(ids[0])) { try manager.cancel(ids[0]) }
        gate.open()
        manager.close()
    }

    @Test func aChecksumMismatchLeavesNoBadFileAndOnlyThatItemFails() async throws {
        try await withFixture { fixture in
            let good = try fixture.makeFile("good.bin", count: 300_000)
            _ = try fixture.makeFile("bad.bin", count: 300_000)
            let folder = try scratchFolder()
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: folder, configuration: testConfiguration(log), resultQueue: log.queue, onUpdate: log.handler)
            let wrong = try Checksum(sha256: String(repeating: "ab", count: 32))
            let bad = try manager.add(fixture.url("files/bad.bin"), checksum: wrong)
            let fine = try manager.add(fixture.url("files/good.bin"), checksum: .sha256(of: good))

            let summary = await manager.waitUntilFinished()

            let failure = try #require(summary.failed.first?.state.failure)
            #expect(summary.failed.map(\.id) == [bad])
            #expect(failure.kind == .checksumMismatch)
            #expect(failure.message.contains("checksum mismatch for bad.bin"))
            #expect(failure.message.contains("expected sha-256=abab"))
            #expect(!exists(folder.appendingPathComponent("bad.bin")))
            #expect(!exists(folder.appendingPathComponent("bad.bin.part")))
            #expect(!exists(folder.appendingPathComponent("bad.bin.part.meta")))
            #expect(summary.completed.map(\.id) == [fine])
            #expect(try Data(contentsOf: folder.appendingPathComponent("good.bin")) == good)
            manager.close()
        }
    }

    @Test func aDirectoryInTheWayIsUntouchedAndOnlyThatItemFails() async throws {
        try await withFixture { fixture in
            let bytes = try fixture.makeFile("photos", count: 50_000)
            _ = try fixture.makeFile("other.bin", count: 50_000)
            let folder = try scratchFolder()
            let photos = folder.appendingPathComponent("photos")
            try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
            try Data("precious".utf8).write(to: photos.appendingPathComponent("keep.jpg"))
            // A file the manager did not download is not overwritten either.
            try Data("mine".utf8).write(to: folder.appendingPathComponent("mine.bin"))
            let log = UpdateLog()
            let manager = try DownloadManager(
                directory: folder, configuration: testConfiguration(log), resultQueue: log.queue, onUpdate: log.handler)
            let blocked = try manager.add(fixture.url("files/photos"))
            let taken = try manager.add(fixture.url("files/other.bin"), name: "mine.bin")
            let fine = try manager.add(fixture.url("files/other.bin"))

            let summary = await manager.waitUntilFinished()

            #expect(summary.failed.map(\.id) == [blocked, taken])
            #expect(manager.item(blocked)?.state.failure?.kind == .file)
            #expect(manager.item(blocked)?.state.failure?.message.contains("it is a directory") == true)
            #expect(manager.item(taken)?.state.failure?.kind == .fileInTheWay)
            #expect(summary.completed.map(\.id) == [fine])
            #expect(try Data(contentsOf: photos.appendingPathComponent("keep.jpg")) == Data("precious".utf8))
            #expect(try Data(contentsOf: folder.appendingPathComponent("mine.bin")) == Data("mine".utf8))
            #expect(bytes.count == 50_000)

            // Removing the failed items touches neither.
            try manager.remove(blocked, deletingFile: true)
            try manager.remove(taken, deletingFile: true)
            #expect(try Data(contentsOf: photos.appendingPathComponent("keep.jpg")) == Data("precious".utf8))
            #expect(try Data(contentsOf: folder.appendingPathComponent("mine.bin")) == Data("mine".utf8))
            // Removing a completed item keeps its file unless asked.
            try manager.remove(fine)
            #expect(exists(folder.appendingPathComponent("other.bin")))
            manager.close()
        }
    }

    @Test func badInputIsRefusedWithClearErrors() async throws {
        // Requests are held unanswered: closing cancels a transfer that is waiting, never one ending.
        let held = Gate()
        let server = try ScriptedServer { _, _ in .waiting(for: held, then: .respond(200)) }
        defer {
            server.stop()
            held.open()
        }
        let folder = try scratchFolder()
        let manager = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        defer { manager.close() }
        let url = server.url("file.bin")

        for name in ["", ".", "..", "../x", "a/b", "x.part", "x.part.meta", ".jobkit-downloads.journal", "a\nb"] {
            #expect(throws: DownloadManagerError.self, "\(name)") { try manager.add(url, name: name) }
        }
        let error = #expect(throws: DownloadManagerError.self) { try manager.add(url, name: "../x") }
        #expect(
            error?.localizedDescription
                == "invalid file name '../x': it has a '/': a name is one file in the directory (a file name, not a path: no '/')"
        )
        #expect(throws: DownloadManagerError.unsupportedURL("ftp://host/file")) {
            try manager.add(URL(string: "ftp://host/file")!)
        }
        #expect(throws: DownloadManagerError.unsupportedURL("file:///etc/passwd")) {
            try manager.add(URL(fileURLWithPath: "/etc/passwd"))
        }
        #expect(throws: DownloadManagerError.self) { try manager.add(URL(string: "http://host/")!) }

        let id = try manager.add(url, name: "taken.bin")
        #expect(try manager.add(url, name: "taken.bin") == id, "the same request is the same item")
        #expect(throws: DownloadManagerError.nameTaken("taken.bin", by: id)) {
            try manager.add(server.url("other.bin"), name: "taken.bin")
        }
        #expect(throws: DownloadManagerError.nameTaken("taken.bin", by: id)) {
            try manager.add(url, name: "taken.bin", checksum: .sha256(of: Data()))
        }
        // A batch is all or nothing.
        #expect(throws: DownloadManagerError.self) {
            try manager.add(contentsOf: [.init(url: url, name: "fresh.bin"), .init(url: url, name: "..")])
        }
        #expect(manager.items.map(\.name) == ["taken.bin"])
    }

    @Test func twoManagersOnOneDirectoryFailTheSecond() async throws {
        let folder = try scratchFolder()
        let first = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        let error = #expect(throws: DownloadManagerError.directoryInUse(folder.standardizedFileURL.path)) {
            _ = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        }
        #expect(error?.localizedDescription.contains("in use by another download manager") == true)
        first.close()
        #expect(throws: DownloadManagerError.closed) { try first.add(URL(string: "http://h/x")!) }
        let second = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        second.close()
    }

    @Test func transientFailuresAreRetriedAndResumeThePart() async throws {
        let bytes = pattern(100_000)
        let server = try ScriptedServer { request, index in
            if index == 0 { return .drop(headers: ["ETag": "\"r\""], body: bytes, sent: 30_000) }
            if index == 1 { return .respond(503, headers: ["Retry-After": "0"]) }
            let start = request.rangeStart ?? 0
            return .respond(
                206, headers: ["ETag": "\"r\"", "Content-Range": "bytes \(start)-99999/100000"],
                body: bytes.dropFirst(start))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let retry = DownloadManager.RetryPolicy(attempts: 4, backoff: .constant(.milliseconds(10)))
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log, retry: retry), resultQueue: log.queue,
            onUpdate: log.handler)
        try manager.add(server.url("r.bin"))

        let summary = await manager.waitUntilFinished()

        #expect(summary.allSucceeded)
        #expect(try Data(contentsOf: folder.appendingPathComponent("r.bin")) == bytes)
        #expect(server.requests.map(\.headers["range"]) == [nil, "bytes=30000-", "bytes=30000-"])
        manager.close()
    }

    @Test func aFailureSaysWhyAndAddingItAgainRetriesIt() async throws {
        let fail = LockedBox<Bool>.make(true)
        let server = try ScriptedServer { _, _ in
            fail.withLock { $0 } ? .respond(404) : .respond(200, body: pattern(1000))
        }
        defer { server.stop() }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log), resultQueue: log.queue,
            onUpdate: log.handler)
        let id = try manager.add(server.url("missing.bin"))
        let first = await manager.waitUntilFinished()
        let failure = try #require(first.failed.first?.state.failure)
        #expect(failure.kind == .httpStatus)
        #expect(failure.status == 404)
        #expect(failure.message.contains("HTTP 404"))
        #expect(failure.message.contains("/missing.bin"))

        fail.withLock { $0 = false }
        #expect(try manager.add(server.url("missing.bin")) == id)
        let second = await manager.waitUntilFinished()
        #expect(second.allSucceeded)
        await log.waitForDrain(count: 2)
        #expect(log.summaries.count == 2, "one notice each time the queue drains")
        manager.close()
    }

    /// The `done` record of the last completion is written by the thread that completed the run,
    /// after the item reads completed: a waiter that comes in between returns only once it is in the
    /// journal (a process that exits then keeps it).
    @Test func waitUntilFinishedReturnsOnceTheLastDoneRecordIsInTheJournal() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(1000)) }
        defer { server.stop() }
        let log = UpdateLog()
        let armed = LockedBox<Bool>.make(false)
        let (writing, writer) = AsyncStream<Void>.makeStream()
        var configuration = testConfiguration(log)
        configuration.testHooks.afterFinishing = { _ in armed.withLock { $0 = true } }
        configuration.testHooks.journalFailure = {
            let firstAfterFinishing = armed.withLock { armed in
                defer { armed = false }
                return armed
            }
            guard firstAfterFinishing else { return nil }
            writer.yield()
            // Holds the `done` record's write open for a moment (no outcome depends on how long): a
            // waiter that returns before it is written reads a journal without it.
            Thread.sleep(forTimeInterval: 0.3)
            return nil
        }
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: configuration, resultQueue: log.queue,
            onUpdate: log.handler)
        defer { manager.close() }
        let id = try manager.add(server.url("f.bin"))
        for await _ in writing { break }
        #expect(manager.item(id)?.state == .completed, "the run has completed; its `done` record is being written")

        let summary = await manager.waitUntilFinished()

        #expect(summary.allSucceeded)
        let journal = try DownloadJournal.parse(Data(contentsOf: manager.journalURL))
        #expect(journal.entries.map(\.status) == [.completed(size: 1000)])
    }

    @Test func thePerHostLimitHoldsWhileOtherHostsGoOn() async throws {
        // Two "hosts": 127.0.0.1 and localhost name the same server, but not the same host key.
        let inFlight = LockedBox<(now: [String: Int], peak: [String: Int])>.make(([:], [:]))
        let release = Gate()
        let server = try ScriptedServer { request, _ in
            let host = request.headers["host"]?.split(separator: ":").first.map(String.init) ?? "?"
            inFlight.withLock { state in
                state.now[host, default: 0] += 1
                state.peak[host] = max(state.peak[host, default: 0], state.now[host]!)
            }
            return .waiting(for: release, then: .respond(200, body: pattern(10)))
        }
        defer { server.stop() }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log, maxConcurrent: 4, maxPerHost: 1),
            resultQueue: log.queue, onUpdate: log.handler)
        var requests: [DownloadManager.Request] = []
        for index in 0..<4 {
            requests.append(.init(url: URL(string: "http://127.0.0.1:\(server.port)/a\(index)")!))
        }
        requests.append(.init(url: URL(string: "http://localhost:\(server.port)/b0")!))

        try manager.add(contentsOf: requests)

        await manager.until("one per host runs") { $0.totals.running == 2 }
        #expect(manager.items.filter { $0.state == .running }.map(\.name) == ["a0", "b0"])
        release.open()
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        manager.close()
    }
}
