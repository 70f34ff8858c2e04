import Foundation
import JobKit
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small files served recently, in memory, so that a popular file is sent from one shared buffer instead of
/// being read from disk for every request.
///
/// Bounded: files up to `maximumFileBytes`, at most `maximumTotalBytes` and `maximumEntryCount` files in all;
/// past that the least recently used go first. An entry is used only while `stat` still gives the size and modification time it was read
/// with (the same values as the `ETag`), so a changed file is read again.
final class FileCache: Sendable {
    static let maximumFileBytes = 4 << 20
    static let maximumTotalBytes = 32 << 20
    static let maximumEntryCount = 256

    private struct Entry: Sendable {
        var info: FileInfo
        var contents: ByteBuffer
        var lastUse: UInt64
    }

    private struct State: Sendable {
        var entries: [String: Entry] = [:]
        var totalBytes = 0
        var clock: UInt64 = 0

        mutating func lookUp(_ path: String, _ info: FileInfo) -> ByteBuffer? {
            guard var entry = entries[path], entry.info == info else { return nil }
            clock += 1
            entry.lastUse = clock
            entries[path] = entry
            return entry.contents
        }

        mutating func insert(_ path: String, _ info: FileInfo, _ contents: ByteBuffer) {
            if let old = entries.removeValue(forKey: path) { totalBytes -= old.contents.readableBytes }
            while totalBytes + contents.readableBytes > FileCache.maximumTotalBytes
                || entries.count >= FileCache.maximumEntryCount,
                let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })
            {
                entries.removeValue(forKey: oldest.key)
                totalBytes -= oldest.value.contents.readableBytes
            }
            clock += 1
            entries[path] = Entry(info: info, contents: contents, lastUse: clock)
            totalBytes += contents.readableBytes
        }
    }

    private let state = LockedBox<State>.make(State())

    /// How many files and bytes it holds now.
    var usage: (files: Int, bytes: Int) {
        state.withLock { ($0.entries.count, $0.totalBytes) }
    }

    /// The contents of the file at `path`, whose `stat` gave `info`: from memory, or read now (and kept). Nil
    /// when the file is too large to keep, cannot be read, or changed while it was read.
    func contents(of path: String, _ info: FileInfo) -> ByteBuffer? {
        guard info.size <= Self.maximumFileBytes else { return nil }
        if let cached = state.withLock({ $0.lookUp(path, info) }) { return cached }
        guard let contents = Self.read(path, size: info.size), FileInfo(path: path) == info else { return nil }
        state.withLock { $0.insert(path, info, contents) }
        return contents
    }

    /// Reads exactly `size` bytes of the file (one blocking read of at most `maximumFileBytes`).
    private static func read(_ path: String, size: Int) -> ByteBuffer? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = ByteBufferAllocator().buffer(capacity: size)
        var complete = true
        while buffer.readableBytes < size, complete {
            let offset = buffer.readableBytes
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size - offset) { bytes in
                guard let base = bytes.baseAddress else { return 0 }
                let read = pread(descriptor, base, size - offset, off_t(offset))
                return max(read, 0)
            }
            complete = count > 0
        }
        return buffer.readableBytes == size ? buffer : nil
    }
}
