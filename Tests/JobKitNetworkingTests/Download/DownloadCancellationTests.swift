import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A cancel at each moment around a finished download's rename: before it, the file never takes
/// its name and the run ends cancelled; after it, the cancel is too late and the run ends finished.
/// Never both: a run that ends cancelled leaves no file under the destination's name. Serialized:
/// one test sets `DiskSync.beforeSync`, which every download of the process calls.
@Suite(.serialized) struct DownloadCancellationTests {
    /// A download of `bytes` to `destination` through `kind`, performed on `queue` (suspended until
    /// its handle is known, so that `act` always has it); its one result comes through the stream.
    func perform(
        _ bytes: Data, from server: ScriptedServer, to destination: URL, through kind: TransportKind,
        durability: Durability = .process, on queue: DispatchQueue,
        beforeFinalize act: @escaping @Sendable (JobHandle) -> Void = { _ in }
    ) -> (handle: JobHandle, results: AsyncStream<Result<URL, any Error>>) {
        let handle = LockedBox<JobHandle?>.make(nil)
        let hooks = DownloadHooks(
            began: { _, _ in }, received: { _ in },
            beforeFinalize: { _, _ in handle.withLock { $0 }.map(act) })
        let (results, sink) = AsyncStream.makeStream(of: Result<URL, any Error>.self)
        queue.suspend()
        let performed = Job<URL>.download(
            from: server.url("file"), to: destination, transport: kind.transport, blindResume: false,
            durability: durability, hooks: hooks
        ).perform(on: queue, resultQueue: .global()) { sink.yield($0) }
        handle.withLock { $0 = performed }
        queue.resume()
        return (performed, results)
    }

    @Test(arguments: TransportKind.allCases)
    func aCancelJustBeforeTheRenameKeepsOnlyThePart(_ kind: TransportKind) async throws {
        let bytes = pattern(30_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("before.bin")

        let (_, results) = perform(
            bytes, from: server, to: destination, through: kind, on: DispatchQueue(label: "before")
        ) { $0.cancel() }
        let result = await results.first { _ in true }

        #expect((result?.failureError as? JobError) == .cancelled, "\(String(describing: result))")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination.path + ".part")) == bytes)
        // The destination is free again.
        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value
        #expect(try Data(contentsOf: destination) == bytes)
    }

    @Test(arguments: TransportKind.allCases)
    func aCancelWhileThePartIsFlushedStopsTheRename(_ kind: TransportKind) async throws {
        let bytes = pattern(30_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("flushed.bin")
        let partPath = destination.path + ".part"
        let flushedPart = "/" + destination.deletingLastPathComponent().lastPathComponent + "/flushed.bin.part"
        let cancelled = LockedBox<JobHandle?>.make(nil)
        // The `.part` is flushed (`.system`) under its lock, just before the rename: the cancel is
        // made from another thread (its handler waits for that lock) and is in place before the
        // flush goes on.
        DiskSync.beforeSync.withLock { hook in
            hook = { path in
                guard path.hasSuffix(flushedPart), let handle = cancelled.withLock({ $0 }) else { return }
                Thread.detachNewThread { handle.cancel() }
                let deadline = ContinuousClock.now + safetyDeadline
                while handle.state != .cancelled, ContinuousClock.now < deadline { sched_yield() }
            }
        }
        defer { DiskSync.beforeSync.withLock { $0 = nil } }

        let (_, results) = perform(
            bytes, from: server, to: destination, through: kind, durability: .system,
            on: DispatchQueue(label: "flushed")
        ) { handle in cancelled.withLock { $0 = handle } }
        let result = await results.first { _ in true }

        #expect((result?.failureError as? JobError) == .cancelled, "\(String(describing: result))")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: partPath)) == bytes)
        _ = try await Job<URL>.download(from: server.url("file"), to: destination, transport: kind.transport).value
        #expect(try Data(contentsOf: destination) == bytes)
    }

    @Test(arguments: TransportKind.allCases)
    func aCancelRightAfterTheRenameIsTooLateAndTheRunFinishes(_ kind: TransportKind) async throws {
        let bytes = pattern(30_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("after.bin")
        let queue = DispatchQueue(label: "after")

        // Queued on the run's queue from the step that renames: it runs right after that step.
        let (handle, results) = perform(bytes, from: server, to: destination, through: kind, on: queue) { handle in
            queue.async { handle.cancel() }
        }
        let result = await results.first { _ in true }

        #expect(try result?.get() == destination)
        #expect(handle.state == .finished)
        #expect(try Data(contentsOf: destination) == bytes)
        #expect(!FileManager.default.fileExists(atPath: destination.path + ".part"))
    }
}
