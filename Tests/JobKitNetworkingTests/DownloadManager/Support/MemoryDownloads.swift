import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting

@testable import JobKitNetworking

/// A download manager's world with no disk, no sockets and no real time: a `MemoryFileSystem`, a
/// `ScriptedTransport` serving `bytes` (honouring `Range` with `If-Range`, so a `.part` resumes)
/// and a `TestScheduler`. Managers opened on it one after another share the disk, as processes
/// started one after another share a directory.
struct MemoryDownloads {
    let disk = MemoryFileSystem()
    let scheduler = TestScheduler()
    /// The manager's directory on `disk` (its own per world: destinations are claimed per path).
    let folder = URL(fileURLWithPath: "/memory-\(UUID().uuidString)/downloads")
    let bytes: Data
    let transport: ScriptedTransport
    /// The file's URL on the transport.
    let url = URL(string: "http://scripted.test/big.bin")!

    /// Serves `bytes` with an ETag; the first answer drops after `dropAt` bytes when given.
    init(bytes: Data, dropAt: Int? = nil) {
        self.bytes = bytes
        transport = ScriptedTransport { request, index in
            let sent = index == 0 ? dropAt : nil
            let range = request.value(forHTTPHeaderField: "Range")
            guard let range, request.value(forHTTPHeaderField: "If-Range") == "\"v1\"",
                let start = Int(range.dropFirst("bytes=".count).dropLast())
            else {
                return .init(status: 200, headers: ["ETag": "\"v1\""], body: bytes, sent: sent)
            }
            return .init(
                status: 206,
                headers: ["ETag": "\"v1\"", "Content-Range": "bytes \(start)-\(bytes.count - 1)/\(bytes.count)"],
                body: bytes.dropFirst(start), sent: sent)
        }
    }

    /// Opens a manager on the world, with a retry after a 10 s backoff when `retries`.
    func open(durability: Durability = .process, retries: Bool = false, log: UpdateLog = UpdateLog()) throws
        -> DownloadManager
    {
        var configuration = testConfiguration(
            log, retry: retries ? DownloadManager.RetryPolicy(attempts: 2, backoff: .constant(.seconds(10))) : .none)
        configuration.scheduler = scheduler
        configuration.httpTransport = transport
        configuration.fileSystem = disk
        configuration.durability = durability
        return try DownloadManager(directory: folder, configuration: configuration, onUpdate: log.handler)
    }

    /// The bytes of `name` in the manager's directory; nil when there is no such file.
    func contents(of name: String) -> Data? { disk.contents(of: name, in: folder.path) }

    /// The names in the manager's directory.
    var names: [String] { disk.names(in: folder.path) }
}
