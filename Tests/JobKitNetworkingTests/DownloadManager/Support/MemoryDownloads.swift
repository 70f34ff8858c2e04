import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// A download manager's world with no disk, no sockets and no real time: a `MemoryFileSystem`, a
/// `ScriptedTransport` serving `bytes` (honouring `Range` with `If-Range`, so a `.part` resumes)
/// and a `WatchedScheduler` (a `TestScheduler` a test can wait on). Managers opened on it one after
/// another share the disk, as processes started one after another share a directory.
struct MemoryDownloads {
    let disk = MemoryFileSystem()
    let scheduler = WatchedScheduler()
    /// The manager's directory on `disk` (its own per world: destinations are claimed per path).
    let folder = URL(fileURLWithPath: "/memory-\(UUID().uuidString)/downloads")
    let bytes: Data
    let transport: ScriptedTransport
    /// The file's URL on the transport.
    let url = URL(string: "http://scripted.test/big.bin")!

    /// Serves `bytes` with an ETag, a `Range` (`bytes=A-` or `bytes=A-B`) with a `206` unless an
    /// `If-Range` names another validator; the answer to request `dropping` (from 0) drops after
    /// `dropAt` bytes when given, or holds the rest of its body after `holdAt` bytes until
    /// `transport.release()` (or its run's cancel), as a stalled server does.
    init(bytes: Data, dropAt: Int? = nil, holdAt: Int? = nil, dropping: Int = 0) {
        self.bytes = bytes
        transport = ScriptedTransport { request, index in
            let sent = index == dropping ? dropAt : nil
            let holds = index == dropping ? holdAt.map { [$0] } ?? [] : []
            let bounds = request.value(forHTTPHeaderField: "Range").map {
                $0.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            }
            let ifRange = request.value(forHTTPHeaderField: "If-Range")
            guard let bounds, bounds.count == 2, ifRange == nil || ifRange == "\"v1\"", let start = Int(bounds[0])
            else {
                return .init(status: 200, headers: ["ETag": "\"v1\""], body: bytes, sent: sent, holds: holds)
            }
            let end = Int(bounds[1]) ?? bytes.count - 1
            return .init(
                status: 206,
                headers: ["ETag": "\"v1\"", "Content-Range": "bytes \(start)-\(end)/\(bytes.count)"],
                body: bytes.subdata(in: start..<end + 1), sent: sent, holds: holds)
        }
    }

    /// Opens a manager on the world, with a retry after a 10 s backoff when `retries`; restored
    /// items start unless `startsRestored` is false (they wait to be added again). With
    /// `syncInterval`, a `.part` is flushed every that many bytes with `.system` durability;
    /// `beforeUnlink` sees the names of each batch of unlinks before it is done; `afterFinishing`
    /// runs once an item's `finishing` is written, before its `.part` takes the name.
    func open(
        durability: Durability = .process, retries: Bool = false, startsRestored: Bool = true,
        syncInterval: Int64? = nil, log: UpdateLog = UpdateLog(),
        beforeUnlink: @escaping @Sendable ([String]) -> Void = { _ in },
        afterFinishing: @escaping @Sendable (DownloadManager.ItemID) -> Void = { _ in }
    ) throws -> DownloadManager {
        var configuration = testConfiguration(
            log, retry: retries ? DownloadManager.RetryPolicy(attempts: 2, backoff: .constant(.seconds(10))) : .none)
        configuration.scheduler = scheduler
        configuration.httpTransport = transport
        configuration.fileSystem = disk
        configuration.durability = durability
        configuration.startsRestoredItems = startsRestored
        if let syncInterval { configuration.testHooks.partSyncInterval = syncInterval }
        configuration.testHooks.beforeUnlink = beforeUnlink
        configuration.testHooks.afterFinishing = afterFinishing
        return try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
    }

    /// A manager (with retries) that added the URL and whose first attempt dropped at `dropAt` and
    /// waits for its 10 s backoff: the moment a crash test kills the process or cuts the power.
    func openDroppedOnce(
        durability: Durability = .process, syncInterval: Int64? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> DownloadManager {
        let manager = try open(durability: durability, retries: true, syncInterval: syncInterval)
        try manager.add(url)
        await scheduler.until("the first attempt dropped and waits for its backoff", sourceLocation: sourceLocation) {
            $0.contains(.seconds(10))
        }
        return manager
    }

    /// A manager whose item has the `.part` of a dropped first attempt, restored suspended by a new
    /// manager: no run of it, whose end would write the journal or unlink the `.part` once more.
    func openSuspendedWithPart(durability: Durability = .process) async throws
        -> (DownloadManager, DownloadManager.ItemID)
    {
        let dropped = try await openDroppedOnce(durability: durability)
        let id = try #require(dropped.items.first?.id)
        try dropped.suspend(id)
        dropped.close()
        return (try open(durability: durability), id)
    }

    /// The bytes of `name` in the manager's directory; nil when there is no such file.
    func contents(of name: String) -> Data? { disk.contents(of: name, in: folder.path) }

    /// The metadata beside the `.part` of `name`, as written; nil when there is none.
    func metadata(of name: String = "big.bin") -> PartMetadata? {
        contents(of: name + ".part.meta").flatMap { try? JSONDecoder().decode(PartMetadata.self, from: $0) }
    }

    /// The names in the manager's directory.
    var names: [String] { disk.names(in: folder.path) }

    /// Appends `data` to the file `name` in the manager's directory in place (the same file, a new
    /// length), as a user editing it does.
    func append(_ data: Data, to name: String) throws {
        let directory = try disk.openDirectory(atPath: folder.path).get()
        let file = try directory.openFile(name, O_WRONLY | O_APPEND, mode: 0).get()
        defer { file.close() }
        if let code = data.withUnsafeBytes({ file.write($0) }) {
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    /// Suspends until `condition` holds for the bytes of `name` in the manager's directory (nil: no
    /// such file), resumed by the file operation that makes it true.
    @discardableResult
    func until(
        _ what: String, file name: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (Data?) -> Bool
    ) async -> Bool {
        let folder = folder.path
        return await disk.until(what, sourceLocation: sourceLocation) { condition($0.contents(of: name, in: folder)) }
    }
}
