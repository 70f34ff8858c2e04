import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A FIFO another process writes lines to, read as they come — the handle's readability handler
/// runs on each write, nothing polls — for a test to wait on (`until`). The lines outlive the writer: a
/// child killed mid-way leaves what it wrote.
///
/// **Threading.** Call anything from any thread or task; the FIFO is read on a queue of its own.
/// `close()` (once) stops the reading and removes the FIFO.
///
/// ```swift
/// let events = try LineFIFO()
/// defer { events.close() }
/// let child = try LaunchedProcess(arguments, product: "DownloadManagerProbe", environment: ["EVENTS": events.path])
/// await events.until("it completed") { $0.contains("completed a.bin") }
/// ```
final class LineFIFO: Sendable {
    /// Where the writer opens it (for writing).
    let path: String
    private let lines = Watched<[String]>([])
    private let handle: FileHandle

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-fifo-\(UUID().uuidString)").path
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // Read and write: a writer of its own, so that reading never sees an end before the child
        // opens it or after it dies (a read-only end would wake on the end, over and over).
        let descriptor = open(path, O_RDWR | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            unlink(path)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        let partial = Watched(Data())
        let lines = lines
        // Called on a queue of the handle's each time the FIFO has bytes to read.
        handle.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else { return }
            let complete = partial.withLock { partial -> [String] in
                partial.append(data)
                guard let end = partial.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
                defer { partial.removeSubrange(...end) }
                return String(decoding: partial[...end], as: UTF8.self).split(separator: "\n").map(String.init)
            }
            if !complete.isEmpty { lines.withLock { $0 += complete } }
        }
    }

    /// The lines read so far, in order.
    var current: [String] { lines.current }

    /// Suspends until `condition` holds for the lines read so far, resumed by the read that makes
    /// it true (see `Watched.until`).
    func until(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable ([String]) -> Bool
    ) async {
        await lines.until(what, sourceLocation: sourceLocation, condition)
    }

    /// Stops reading and removes the FIFO.
    func close() {
        handle.readabilityHandler = nil
        try? handle.close()
        unlink(path)
    }
}
