import AsyncHTTPClient
import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Downloads through AsyncHTTPClient: where their file work runs, and what ends them.
@Suite struct HTTPClientTransferTests {
    @Test func aTimerOnTheDownloadsEventLoopFiresOnTimeWhileItsPartIsTruncatedAndWritten() async throws {
        // One event loop, so that the download's callbacks and the timers share it. The `.part` of
        // an earlier version is 1 GiB (sparse); the server ignores `Range` and sends the new
        // version whole, so the download truncates the 1 GiB `.part`, writes its metadata and
        // then the body. The hooks, called in the same callbacks as that file work, stand in for
        // a slow disk: each holds its thread until a timer on the event loop has fired. On the
        // event loop, no timer could fire until the hook gave up (by its safety deadline).
        // Meanwhile a timer every 5 ms measures how late the loop runs anything.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        let http = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        let body = largePattern(512 * 1024, seed: 3)
        let server = try ScriptedServer { _, _ in .respond(200, headers: ["ETag": "\"new\""], body: body) }
        defer { server.stop() }
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("big.bin")
        let gibibyte = 1 << 30
        try leavePart(Data(), of: server.url("big"), at: destination, etag: "\"old\"", total: gibibyte + 1)
        #expect(truncate(destination.path + ".part", off_t(gibibyte)) == 0)
        let probe = EventLoopProbe(loop)
        let ticker = LatenessTicker(loop)
        let chunks = LockedBox<Int>.make(0)
        let hooks = DownloadHooks(
            began: { _, _ in probe.slowFileOperation() },
            received: { _ in
                if chunks.withLock({ count in
                    count += 1
                    return count <= 2
                }) {
                    probe.slowFileOperation()
                }
            },
            beforeFinalize: { _, _ in })

        ticker.start()
        let result = await outcome(
            of: Job<URL>.download(
                from: server.url("big"), to: destination, transport: DownloadTransport.asyncHTTPClient(http),
                blindResume: false,
                durability: .process, hooks: hooks))
        let windowLateness = ticker.stop()
        try await http.shutdown()
        try await group.shutdownGracefully()

        #expect(result.failureError == nil)
        #expect(try Data(contentsOf: destination) == body, "written whole and in order")
        let samples = probe.samples
        #expect(samples.count == 3)
        for sample in samples {
            #expect(sample.offLoop, "file work ran on an event loop")
            #expect(sample.firedWhileHeld, "no timer of the loop fired while the file work held its thread")
        }
        // How late the loop's timers fire over the whole download is a figure of the machine's load:
        // printed, not asserted (BENCHMARKS.md has it measured on a quiet machine).
        print("a timer of the download's event loop fired at most \(windowLateness) late")
    }

    @Test func aTransferWaitingForAConnectionIsQueuedAgainNotFailed() async throws {
        // A client with one connection per host, which gives up waiting for it after 1 s. The
        // server holds the first answer 1.5 s: the second download waits for the connection
        // longer than that (AsyncHTTPClient's `getConnectionFromPoolTimeout`), then gets it.
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(1), read: .seconds(20)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
        configuration.decompression = .disabled
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let bodies = [pattern(40_000, seed: 1), pattern(40_000, seed: 2)]
        let server = try ScriptedServer { request, index in
            let reply = ScriptedServer.Reply.respond(200, body: bodies[request.path == "/a" ? 0 : 1])
            guard index == 0 else { return reply }
            let held = Gate()
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1500)) { held.open() }
            return .waiting(for: held, then: reply)
        }
        defer { server.stop() }
        let folder = try scratchFolder()

        async let first = outcome(
            of: Job<URL>.download(
                from: server.url("a"), to: folder.appendingPathComponent("a"), transport: .asyncHTTPClient(http)))
        async let second = outcome(
            of: Job<URL>.download(
                from: server.url("b"), to: folder.appendingPathComponent("b"), transport: .asyncHTTPClient(http)))
        let results = await [first, second]
        try await http.shutdown()

        for result in results { #expect(result.failureError == nil) }
        #expect(try Data(contentsOf: folder.appendingPathComponent("a")) == bodies[0])
        #expect(try Data(contentsOf: folder.appendingPathComponent("b")) == bodies[1])
        #expect(server.requests.count == 2, "a request queued again was sent once")
    }

    @Test func sixtyFourDownloadsAtOnceAllRunAndComplete() async throws {
        // The manager's own client: all 64 connect at once (the server answers none before it has
        // all 64 requests), and their writes share the blocking pool's threads.
        let http = DownloadHTTPClient.make()
        let count = 64
        let all = Gate()
        let server = try ScriptedServer { request, index in
            if index == count - 1 { all.open() }
            let seed = Int(request.path.dropFirst()) ?? 0
            return .waiting(for: all, then: .respond(200, body: largePattern(128 * 1024, seed: seed)))
        }
        defer { server.stop() }
        // Only when the client would not open 64 connections: fail instead of hanging.
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { all.open() }
        let folder = try scratchFolder()

        let failures = await withTaskGroup(of: (any Error)?.self) { group in
            for seed in 0..<count {
                group.addTask {
                    let destination = folder.appendingPathComponent("\(seed)")
                    let result = await outcome(
                        of: Job<URL>.download(
                            from: server.url("\(seed)"), to: destination, transport: .asyncHTTPClient(http)))
                    if let error = result.failureError { return error }
                    return (try? Data(contentsOf: destination)) == largePattern(128 * 1024, seed: seed)
                        ? nil : DownloadError(kind: .inconsistentResponse("wrong bytes"), path: destination.path)
                }
            }
            return await group.reduce(into: [any Error]()) { if let error = $1 { $0.append(error) } }
        }
        try await http.shutdown()

        #expect(failures.isEmpty, "\(failures.map(\.localizedDescription))")
        #expect(server.requests.count == count)
    }

    @Test func cancellingWhileAChunkIsBeingWrittenEndsTheRunAndFreesTheDestination() async throws {
        let body = largePattern(1 << 20, seed: 4)
        let server = try ScriptedServer { _, _ in .respond(200, body: body) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("cancelled.bin")
        // The first chunk's write is held (a slow disk): the run is cancelled from inside it, on the
        // transport's thread, and the write goes on only once the run has reported its end. Nothing
        // waits for the test's task to get a thread while the write is held.
        let handle = Locked<JobHandle?>(nil)
        let runEnded = DispatchSemaphore(value: 0)
        let first = Locked(true)
        let hooks = DownloadHooks(
            began: { _, _ in },
            received: { _ in
                let isFirst = first.withLock { isFirst in
                    defer { isFirst = false }
                    return isFirst
                }
                guard isFirst else { return }
                handle.current?.cancel()
                #expect(wait(for: runEnded), "the cancelled run reports its end while a write is held")
            },
            beforeFinalize: { _, _ in })
        let job = Job<URL>.download(
            from: server.url("file"), to: destination, transport: TransportKind.asyncHTTPClient.transport,
            blindResume: false, durability: .process, hooks: hooks)

        // Started on a queue held until the hook knows the handle.
        let starting = DispatchQueue(label: "starting")
        starting.suspend()
        let result = try await awaitCallbackOrThrow("the cancelled run's end") { done in
            let started = job.perform(on: starting, resultQueue: .global()) { result in
                done.resume(returning: result)
                runEnded.signal()
            }
            handle.withLock { $0 = started }
            starting.resume()
        }

        #expect(result.failureError as? JobError == .cancelled)
        // The held write's transfer ends after it; the destination is free at once.
        _ = try await Job<URL>.download(
            from: server.url("file"), to: destination, transport: TransportKind.asyncHTTPClient.transport
        ).value
        #expect(try Data(contentsOf: destination) == body)
    }

    @Test(arguments: TransportKind.allCases)
    func aServerDroppingMidBodyFailsTransientlyKeepingEveryByteItSent(_ kind: TransportKind) async throws {
        let body = largePattern(300_000, seed: 5)
        let server = try ScriptedServer { _, _ in .drop(headers: ["ETag": "\"d\""], body: body, sent: 200_000) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("dropped.bin")

        let result = await outcome(
            of: Job<URL>.download(from: server.url("d"), to: destination, transport: kind.transport))

        let error = try #require(result.failureError as? TransportError)
        #expect(TransientFailure.isTransient(error))
        // Every byte that arrived, in order: the parts still waiting for the disk when the
        // connection ended were written before the end.
        let part = try Data(contentsOf: URL(fileURLWithPath: destination.path + ".part"))
        #expect(part.count == 200_000)
        #expect(part == body.prefix(200_000))
        #expect(!exists(destination))
    }

    @Test(arguments: TransportKind.allCases)
    func aWriteTheFileSystemRefusesFailsTheDownloadNamingThePartAndTheReason(_ kind: TransportKind) async throws {
        // A real failing write, with no file system to fill: a sparse `.part` 1,000 bytes short of
        // the largest file the file system allows, resumed by a 206 of 100,000 bytes. The write
        // that crosses the limit fails (EFBIG), as one on a full disk fails with ENOSPC.
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("huge.bin")
        let limit = try largestFileSize(in: folder)
        // A file system with no limit short of Int64.max (tmpfs, APFS) cannot be made to refuse so.
        guard limit < Int64.max / 2 else { return }
        let offset = limit - 1000
        let body = pattern(100_000, seed: 6)
        let server = try ScriptedServer { _, _ in
            .respond(
                206,
                headers: ["ETag": "\"h\"", "Content-Range": "bytes \(offset)-\(offset + 99_999)/\(offset + 100_000)"],
                body: body)
        }
        defer { server.stop() }
        try leavePart(Data(), of: server.url("huge"), at: destination, etag: "\"h\"", total: Int(offset) + 100_000)
        #expect(truncate(destination.path + ".part", off_t(offset)) == 0)

        let result = await outcome(
            of: Job<URL>.download(from: server.url("huge"), to: destination, transport: kind.transport))

        let error = try #require(result.failureError as? DownloadError)
        #expect(error.kind == .cannotWrite(errno: EFBIG))
        #expect(
            error.localizedDescription == "cannot write \(destination.path).part: \(String(cString: strerror(EFBIG)))")
        #expect(!exists(destination))
        #expect(fileSize(URL(fileURLWithPath: destination.path + ".part")).map(Int64.init) == limit)
    }
}

/// The largest length a file in `folder` can have (`ftruncate` refuses one byte more).
private func largestFileSize(in folder: URL) throws -> Int64 {
    let path = folder.appendingPathComponent("probe").path
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(.EIO) }
    defer {
        close(descriptor)
        unlink(path)
    }
    var low: Int64 = 0
    var high = Int64.max
    while low < high {
        let middle = low + (high - low) / 2 + 1
        if ftruncate(descriptor, off_t(middle)) == 0 { low = middle } else { high = middle - 1 }
    }
    return low
}

/// Stands in for a slow disk inside a download's file work, and tells whether the work blocked an
/// event loop: the caller is held until a timer on the loop has fired (whenever a loaded machine lets
/// it) — which no timer of that loop can while the work holds the loop's own thread. A safety
/// deadline ends the hold of a loop that never fires (the test then fails on `firedWhileHeld`).
final class EventLoopProbe: Sendable {
    struct Sample: Sendable {
        /// The file work ran on a thread that is no event loop.
        var offLoop: Bool
        /// A timer of the loop fired while the file work was held.
        var firedWhileHeld = false
        /// The file work stopped waiting for the timer.
        var over = false
    }

    private let loop: any EventLoop
    private let recorded = LockedBox<[Sample]>.make([])

    init(_ loop: any EventLoop) { self.loop = loop }

    var samples: [Sample] { recorded.withLock { $0 } }

    func slowFileOperation() {
        let offLoop = MultiThreadedEventLoopGroup.currentEventLoop == nil
        let index = recorded.withLock { samples in
            samples.append(Sample(offLoop: offLoop))
            return samples.count - 1
        }
        let fired = DispatchSemaphore(value: 0)
        loop.scheduleTask(in: .milliseconds(20)) { [self] in
            let held = recorded.withLock { samples in
                if !samples[index].over { samples[index].firedWhileHeld = true }
                return !samples[index].over
            }
            if held { fired.signal() }
        }
        _ = wait(for: fired)
        recorded.withLock { $0[index].over = true }
    }
}

/// A timer on an event loop every 5 ms, measuring how late each one fires.
final class LatenessTicker: Sendable {
    private let loop: any EventLoop
    private let state = LockedBox<(running: Bool, worst: Duration)>.make((false, .zero))

    init(_ loop: any EventLoop) { self.loop = loop }

    func start() {
        state.withLock { $0.running = true }
        schedule()
    }

    private func schedule() {
        let deadline = NIODeadline.now() + .milliseconds(5)
        loop.scheduleTask(deadline: deadline) { [self] in
            let lateness = Duration.nanoseconds((NIODeadline.now() - deadline).nanoseconds)
            let again = state.withLock { state in
                state.worst = max(state.worst, lateness)
                return state.running
            }
            if again { schedule() }
        }
    }

    /// Stops ticking; how late the latest tick fired.
    func stop() -> Duration {
        state.withLock { state in
            state.running = false
            return state.worst
        }
    }
}
