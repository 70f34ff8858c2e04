import Foundation
import JobKitTestSupport
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
    /// What `when` runs once its condition holds.
    private let triggers = Locked<[Trigger]>([])
    private let handle: FileHandle

    private struct Trigger {
        let condition: @Sendable ([String]) -> Bool
        let action: @Sendable () -> Void
    }

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-fifo-\(UUID().uuidString)").path
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // Read and write: a writer of its own, so that reading never sees an end before the child
        // opens it or after it dies (a read-only end would wake on the end, over and over).
        let descriptor = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            unlink(path)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        let partial = Watched(Data())
        let lines = lines
        let triggers = triggers
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
            guard !complete.isEmpty else { return }
            let read = lines.withLock { lines in
                lines += complete
                return lines
            }
            Self.fire(triggers, on: read)
        }
    }

    /// Runs `action` once as soon as `condition` holds for the lines read so far: on the reading
    /// queue, or on the caller's thread when it holds already: for what must follow a child's line without waiting for the
    /// test's task to get a thread — a loaded machine may take longer than the child's own timeouts.
    func when(_ condition: @escaping @Sendable ([String]) -> Bool, _ action: @escaping @Sendable () -> Void) {
        triggers.withLock { $0.append(Trigger(condition: condition, action: action)) }
        Self.fire(triggers, on: lines.current)
    }

    /// Runs, outside the lock, the triggers whose condition `read` meets (each once: whoever takes it
    /// from the list runs it).
    private static func fire(_ triggers: Locked<[Trigger]>, on read: [String]) {
        let met = triggers.withLock { list -> [Trigger] in
            var met: [Trigger] = []
            list.removeAll { trigger in
                guard trigger.condition(read) else { return false }
                met.append(trigger)
                return true
            }
            return met
        }
        for trigger in met { trigger.action() }
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
