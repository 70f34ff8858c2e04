import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A server for the restore tests: `q…` files are answered at once, `s…` files send their first
/// `stallAt` bytes and then hold the rest until `release` opens; ranges are answered with 206 and
/// the ETag. Every request is recorded (`server.requests`).
struct RestoreServer {
    static let size = 300_000
    static let stallAt = 100_000

    let server: ScriptedServer
    let release = Gate()

    init() throws {
        let release = release
        server = try ScriptedServer { request, _ in
            let name = String(request.path.dropFirst())
            let body = RestoreServer.bytes(name)
            let etag = "\"\(name)-v1\""
            if let start = request.rangeStart {
                guard request.headers["if-range"] == etag, start < body.count else {
                    return .respond(200, headers: ["ETag": etag], body: body)
                }
                return .respond(
                    206, headers: ["ETag": etag, "Content-Range": "bytes \(start)-\(body.count - 1)/\(body.count)"],
                    body: body.dropFirst(start))
            }
            if name.hasPrefix("s") {
                return .stall(body: body, sent: RestoreServer.stallAt, until: release, headers: ["ETag": etag])
            }
            return .respond(200, headers: ["ETag": etag], body: body)
        }
    }

    static func bytes(_ name: String) -> Data { largePattern(size, seed: name.utf8.reduce(0) { $0 &* 31 &+ Int($1) }) }

    func url(_ name: String) -> URL { server.url(name) }

    func requests(for name: String) -> [ScriptedServer.Request] {
        server.requests.filter { $0.path == "/" + name }
    }
}

/// A manager killed (or abandoned) mid-run, and a new one on the same directory.
@Suite struct DownloadManagerRestoreTests {
    static let quick = ["q0.bin", "q1.bin", "q2.bin"]
    static let stalled = ["s0.bin", "s1.bin"]

    /// Checks what a restored manager must do: completed files not fetched again, partial ones
    /// resumed with a validated range, every file byte-exact.
    func expectRestoredAndCompleted(
        in folder: URL, _ server: RestoreServer, requestsBefore: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        #expect(Set(manager.items.map(\.name)) == Set(Self.quick + Self.stalled), sourceLocation: sourceLocation)
        for name in Self.quick {
            #expect(
                manager.items.first { $0.name == name }?.state == .completed, "\(name)", sourceLocation: sourceLocation)
        }
        // Adding the same requests again (a CLI run again) is the same items: nothing new.
        let again = try manager.add(contentsOf: (Self.quick + Self.stalled).map { .init(url: server.url($0)) })
        #expect(again.count == 5, sourceLocation: sourceLocation)
        #expect(manager.items.count == 5, sourceLocation: sourceLocation)

        let summary = await manager.waitUntilFinished()

        #expect(summary.allSucceeded, "\(summary.items.map(\.state))", sourceLocation: sourceLocation)
        for name in Self.quick + Self.stalled {
            #expect(
                try Data(contentsOf: folder.appendingPathComponent(name)) == RestoreServer.bytes(name), "\(name)",
                sourceLocation: sourceLocation)
        }
        let after = Array(server.server.requests.dropFirst(requestsBefore))
        #expect(
            !after.contains { Self.quick.contains(String($0.path.dropFirst())) }, "completed files not fetched again",
            sourceLocation: sourceLocation)
        for name in Self.stalled {
            let resumed = after.filter { $0.path == "/" + name }
            #expect(resumed.count == 1, "\(name)", sourceLocation: sourceLocation)
            #expect(
                resumed.first?.headers["range"] == "bytes=\(RestoreServer.stallAt)-", sourceLocation: sourceLocation)
            #expect(resumed.first?.headers["if-range"] == "\"\(name)-v1\"", sourceLocation: sourceLocation)
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".part") }
        #expect(leftovers.isEmpty, sourceLocation: sourceLocation)
    }

    /// `cleanly`: `close()` (what a tool does on Ctrl-C); else abandoned as a crash would.
    @Test(arguments: [false, true])
    func aManagerStoppedMidRunIsRestoredByTheNextOne(cleanly: Bool) async throws {
        let server = try RestoreServer()
        defer {
            server.release.open()
            server.server.stop()
        }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let first = try DownloadManager(
            directory: folder, configuration: testConfiguration(log, maxConcurrent: 5), resultQueue: log.queue,
            onUpdate: log.handler)
        try first.add(contentsOf: (Self.quick + Self.stalled).map { .init(url: server.url($0)) })
        await first.until("the quick ones completed and the stalled ones have bytes") { update in
            update.totals.completed == 3
                && Self.stalled.allSatisfy { name in
                    update.items.first { $0.name == name }?.progress.received == Int64(RestoreServer.stallAt)
                }
        }
        #expect(Self.quick.allSatisfy { exists(folder.appendingPathComponent($0)) })
        #expect(
            Self.stalled.allSatisfy { fileSize(folder.appendingPathComponent($0 + ".part")) == RestoreServer.stallAt })
        #expect(first.totals.completed == 3)

        if cleanly {
            first.close()
        } else {
            first.abandonForTesting()  // no clean shutdown: the journal stays as the crash left it
        }

        let before = server.server.requests.count
        server.release.open()
        try await expectRestoredAndCompleted(in: folder, server, requestsBefore: before)
    }

    @Test func aCompletedFileEditedSinceIsNeverReplacedEvenWhenAddedAgain() async throws {
        let server = try RestoreServer()
        defer { server.server.stop() }
        let folder = try scratchFolder()
        let file = folder.appendingPathComponent("q0.bin")
        do {
            let log = UpdateLog()
            let first = try DownloadManager(
                directory: folder, configuration: testConfiguration(log), resultQueue: log.queue)
            try first.add(server.url("q0.bin"))
            _ = await first.waitUntilFinished()
            first.close()
        }
        let edited = Data("the user's own notes\n".utf8)
        try edited.write(to: file)
        let requestsBefore = server.server.requests.count

        let log = UpdateLog()
        let second = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue)
        defer { second.close() }
        #expect(second.items.first?.state.failure?.kind == .fileInTheWay)
        try second.add(server.url("q0.bin"))  // queued again: it must fail again, not overwrite
        let summary = await second.waitUntilFinished()

        #expect(summary.failed.first?.state.failure?.kind == .fileInTheWay)
        #expect(try Data(contentsOf: file) == edited)
        #expect(server.server.requests.count == requestsBefore)
        // And the next manager still knows the file is not its own.
        second.close()
        let third = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue)
        defer { third.close() }
        try third.add(server.url("q0.bin"))
        _ = await third.waitUntilFinished()
        #expect(try Data(contentsOf: file) == edited)
    }

    @Test func metadataLeftByAProcessKilledWhileFinalizingIsRemoved() async throws {
        let server = try RestoreServer()
        defer { server.server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let first = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue)
        try first.add(server.url("q1.bin"))
        _ = await first.waitUntilFinished()
        first.close()
        // Killed between the rename and the unlink of its metadata, and mid-way through a metadata write.
        let file = folder.appendingPathComponent("q1.bin").path
        for leftover in [file + ".part.meta", file + ".part.meta.tmp"] {
            #expect(FileManager.default.createFile(atPath: leftover, contents: Data("{".utf8)))
        }

        let second = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue)
        defer { second.close() }

        #expect(second.items.first?.state == .completed)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
                ".jobkit-downloads.journal", "q1.bin",
            ])
    }

    @Test func aProcessKilledMidRunIsRestoredByTheNextManager() async throws {
        let server = try RestoreServer()
        defer {
            server.release.open()
            server.server.stop()
        }
        let folder = try scratchFolder()
        let events = try LineFIFO()
        defer { events.close() }
        var environment = ProcessInfo.processInfo.environment
        environment["DOWNLOAD_PROBE_EVENTS"] = events.path
        let child = try LaunchedProcess(
            [folder.path] + (Self.quick + Self.stalled).map { server.url($0).absoluteString },
            product: "DownloadManagerProbe", environment: environment)
        defer { child.send(SIGKILL) }
        // The child tells its deliveries as they happen: bytes are told once they are in the `.part`.
        let midRun: @Sendable ([String]) -> Bool = { lines in
            Self.quick.allSatisfy { lines.contains("completed \($0)") }
                && Self.stalled.allSatisfy { lines.contains("received \($0) \(RestoreServer.stallAt)") }
        }
        // Killed as the line is read (SIGKILL: no handler, no flush, no unlock but the kernel's), not
        // when this task next gets a thread: the stalled downloads would fail on their own once the
        // server has been silent for their read timeout (60 s), and the child would end by itself.
        events.when(midRun) { child.send(SIGKILL) }
        await events.until("the quick ones completed and the stalled ones have bytes", midRun)
        #expect(Self.quick.allSatisfy { child.output.contains("completed \($0)") })
        #expect(
            Self.stalled.allSatisfy { fileSize(folder.appendingPathComponent($0 + ".part")) == RestoreServer.stallAt })

        #expect(await child.wait() == SIGKILL, "\(child.stderr)")
        let journal = try String(
            contentsOf: folder.appendingPathComponent(".jobkit-downloads.journal"), encoding: .utf8)
        #expect(journal.components(separatedBy: "\"op\":\"done\"").count - 1 == 3, "\(journal)")
        let before = server.server.requests.count
        server.release.open()
        try await expectRestoredAndCompleted(in: folder, server, requestsBefore: before)
    }

    @Test func killedAtRandomMomentsItLosesNothingAndFetchesNoFinishedFileAgain() async throws {
        let names = (0..<40).map { "r\($0).bin" }
        let server = try ScriptedServer { request, _ in
            let name = String(request.path.dropFirst())
            let body = largePattern(150_000, seed: Int(name.dropFirst().dropLast(4)) ?? 0)
            let etag = "\"\(name)\""
            if let start = request.rangeStart, request.headers["if-range"] == etag, start < body.count {
                return .respond(
                    206, headers: ["ETag": etag, "Content-Range": "bytes \(start)-\(body.count - 1)/\(body.count)"],
                    body: body.dropFirst(start))
            }
            // Half at once, the rest 10 to 60 ms later: a kill lands mid-body as often as between files.
            let rest = Gate()
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int.random(in: 10...60))) { rest.open() }
            return .stall(body: body, sent: body.count / 2, until: rest, headers: ["ETag": etag])
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let arguments = [folder.path] + names.map { server.url($0).absoluteString }
        var finished: Set<String> = []
        for round in 0..<3 {
            let before = server.requests.count
            let child = try LaunchedProcess(arguments, product: "DownloadManagerProbe")
            try await Task.sleep(for: .milliseconds(Int.random(in: 50...250)))
            child.send(SIGKILL)
            _ = await child.wait()
            let fetched = Set(server.requests.dropFirst(before).map { String($0.path.dropFirst()) })
            #expect(fetched.isDisjoint(with: finished), "round \(round) fetched finished files again")
            for line in child.output.split(separator: "\n") where line.hasPrefix("completed ") {
                finished.insert(String(line.dropFirst("completed ".count)))
            }
        }

        let before = server.requests.count
        let manager = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        defer { manager.close() }
        try manager.add(contentsOf: names.map { .init(url: server.url($0)) })
        let summary = await manager.waitUntilFinished()

        #expect(summary.completed.count == 40)
        let fetched = Set(server.requests.dropFirst(before).map { String($0.path.dropFirst()) })
        #expect(fetched.isDisjoint(with: finished))
        for name in names {
            let expected = largePattern(150_000, seed: Int(name.dropFirst().dropLast(4)) ?? 0)
            #expect(try Data(contentsOf: folder.appendingPathComponent(name)) == expected, "\(name)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".part") } == [])
    }

    @Test func aSecondProcessOnTheDirectoryFailsWithoutTouchingIt() async throws {
        let folder = try scratchFolder()
        let manager = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        defer { manager.close() }
        try manager.add(URL(string: "http://127.0.0.1:1/refused.bin")!)
        _ = await manager.waitUntilFinished()
        let journal = try Data(contentsOf: manager.journalURL)

        let child = try LaunchedProcess([folder.path, "http://127.0.0.1:1/other.bin"], product: "DownloadManagerProbe")

        #expect(await child.wait() == 3, "\(child.stderr)")
        #expect(child.output.contains("in use by another download manager"), "\(child.output)")
        #expect(try Data(contentsOf: manager.journalURL) == journal)
    }

    @Test func aJournalWrittenByHandIsRestored() async throws {
        // A journal as a killed manager leaves it: a completed file, one whose file is gone, a
        // partial one, a suspended one, and a torn last line.
        let server = try RestoreServer()
        server.release.open()
        defer { server.server.stop() }
        let folder = try scratchFolder()
        let names = ["q0.bin", "q1.bin", "q2.bin", "s0.bin"]
        let records: [DownloadJournal.Record] = [
            .add(1, url: server.url(names[0]), name: names[0], checksum: .sha256(of: RestoreServer.bytes(names[0]))),
            .add(2, url: server.url(names[1]), name: names[1], checksum: nil),
            .add(3, url: server.url(names[2]), name: names[2], checksum: nil),
            .add(4, url: server.url(names[3]), name: names[3], checksum: nil),
            DownloadJournal.Record(op: .finishing, id: 1, size: Int64(RestoreServer.size)),
            DownloadJournal.Record(op: .done, id: 1, size: Int64(RestoreServer.size)),
            DownloadJournal.Record(op: .done, id: 2, size: Int64(RestoreServer.size)),
            .state(4, .suspended),
        ]
        var journal = DownloadJournal.encode(
            header: .init(format: "jobkit-downloads", version: 1, next: 5), records)
        journal.append(Data(#"{"op":"done","id":3,"#.utf8))
        try journal.write(to: folder.appendingPathComponent(".jobkit-downloads.journal"))
        try RestoreServer.bytes(names[0]).write(to: folder.appendingPathComponent(names[0]))
        try RestoreServer.bytes(names[2]).prefix(120_000).write(to: folder.appendingPathComponent(names[2] + ".part"))
        try JSONSerialization.data(withJSONObject: [
            "url": server.url(names[2]).absoluteString, "etag": "\"q2.bin-v1\"", "total": RestoreServer.size,
        ]).write(to: folder.appendingPathComponent(names[2] + ".part.meta"))

        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue, onUpdate: log.handler)
        defer { manager.close() }
        let summary = await manager.waitUntilFinished()
        await log.waitForDrain()

        #expect(summary.completed.map(\.name) == ["q0.bin", "q1.bin", "q2.bin"])
        #expect(summary.suspended.map(\.name) == ["s0.bin"])
        #expect(server.requests(for: "q0.bin").isEmpty, "completed and present: not fetched")
        #expect(server.requests(for: "q1.bin").map(\.headers["range"]) == [nil], "completed but gone: fetched again")
        #expect(server.requests(for: "q2.bin").map(\.headers["range"]) == ["bytes=120000-"], "partial: resumed")
        #expect(server.requests(for: "s0.bin").isEmpty, "suspended: left alone")
        for name in names.prefix(3) {
            #expect(try Data(contentsOf: folder.appendingPathComponent(name)) == RestoreServer.bytes(name))
        }
        // The journal was compacted: no torn line, one line per fact.
        let text = try String(contentsOf: manager.journalURL, encoding: .utf8)
        #expect(text.hasSuffix("\n"))
        #expect(try DownloadJournal.parse(Data(text.utf8)).ignoredLines == 0)
        let ids = manager.items.map(\.id)
        #expect(log.states(of: ids[0]) == [.completed])
        #expect(log.states(of: ids[1]) == [.pending, .running, .completed])
        #expect(log.states(of: ids[2]) == [.pending, .running, .completed])
        #expect(log.states(of: ids[3]) == [.suspended])
        let restored = log.events.first { if case .changed(let item) = $0 { item.id == ids[2] } else { false } }
        if case .changed(let item) = restored {
            #expect(item.progress.received == 120_000, "a restored .part's bytes count from the start")
        }
    }
}
