import Foundation
import JobKit

@testable import JobKitNetworking

/// An open file of a `MemoryFileSystem`: each call is one step on the disk's state, under its lock.
final class MemoryFile: DownloadFile {
    private let disk: Watched<MemoryDisk>
    private let id: Int
    /// The path of its folder, for faults that plant.
    private let folder: String

    init(disk: Watched<MemoryDisk>, id: Int, folder: String) {
        self.disk = disk
        self.id = id
        self.folder = folder
    }

    private func step<Value>(
        _ operation: MemoryFault.Operation?,
        _ body: (inout MemoryDisk.Handle, inout MemoryDisk.Inode) -> Result<Value, POSIXError>
    ) -> Result<Value, POSIXError> {
        disk.withLock { disk in
            if let operation, let failure = disk.fault(operation, file: id, in: folder) { return .failure(failure) }
            return disk.with(id, body)
        }
    }

    private func code(_ result: Result<Void, POSIXError>) -> Int32? {
        if case .failure(let error) = result { return error.code.rawValue }
        return nil
    }

    func size() -> Int64? {
        try? step(nil) { _, inode in .success(Int64(inode.data.count)) }.get()
    }

    func identity() -> FileIdentity? {
        try? step(nil) { handle, _ in .success(FileIdentity(device: 1, inode: UInt64(handle.inode))) }.get()
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        writing(bytes) { bytes, handle, inode in
            let offset = handle.appends ? Int64(inode.data.count) : handle.position
            Self.put(bytes, at: offset, into: &inode)
            handle.position = offset + Int64(bytes.count)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
        writing(bytes) { bytes, _, inode in Self.put(bytes, at: offset, into: &inode) }
    }

    /// A write of `bytes` by `put`. A write that fails puts its first half first, as a write to a
    /// disk that fills up does (`write(2)` takes what fits, the next call fails): what a failed
    /// write leaves behind is the caller's to cut back.
    private func writing(
        _ bytes: UnsafeRawBufferPointer,
        _ put: (UnsafeRawBufferPointer, inout MemoryDisk.Handle, inout MemoryDisk.Inode) -> Void
    ) -> Int32? {
        disk.withLock { disk in
            let failure = disk.fault(.write, file: id, in: folder)
            let written = failure == nil ? bytes : UnsafeRawBufferPointer(rebasing: bytes.prefix(bytes.count / 2))
            let result = disk.with(id) { handle, inode -> Result<Void, POSIXError> in
                guard handle.writable else { return .failure(POSIXError(.EBADF)) }
                put(written, &handle, &inode)
                return .success(())
            }
            return failure?.code.rawValue ?? code(result)
        }
    }

    private static func put(_ bytes: UnsafeRawBufferPointer, at offset: Int64, into inode: inout MemoryDisk.Inode) {
        let start = Int(offset)
        let end = start + bytes.count
        if inode.data.count < end { inode.data += [UInt8](repeating: 0, count: end - inode.data.count) }
        inode.data.replaceSubrange(start..<end, with: bytes)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, POSIXError> {
        step(.read) { handle, inode in
            guard handle.readable else { return .failure(POSIXError(.EBADF)) }
            let start = min(Int(offset), inode.data.count)
            let count = min(buffer.count, inode.data.count - start)
            inode.data.withUnsafeBytes { source in
                buffer.baseAddress?.copyMemory(from: source.baseAddress! + start, byteCount: count)
            }
            return .success(count)
        }
    }

    func truncate(to length: Int64) -> Int32? {
        code(
            step(.truncate) { handle, inode in
                guard handle.writable else { return .failure(POSIXError(.EINVAL)) }
                let length = Int(length)
                if inode.data.count > length {
                    inode.data.removeSubrange(length...)
                } else {
                    inode.data += [UInt8](repeating: 0, count: length - inode.data.count)
                }
                return .success(())
            })
    }

    func seek(to offset: Int64) -> Int32? {
        code(
            step(nil) { handle, _ in
                handle.position = offset
                return .success(())
            })
    }

    func sync() -> Int32? {
        code(
            step(.sync) { _, inode in
                inode.durable = inode.data
                return .success(())
            })
    }

    /// Busy is `EWOULDBLOCK` at once: the disk's lock holders are this process's, and a test that
    /// contends means it.
    func lockExclusively(until deadline: UInt64) -> Int32? {
        code(
            step(.lock) { handle, inode in
                guard inode.lock == nil || inode.lock == handle.description else {
                    return .failure(POSIXError(.EWOULDBLOCK))
                }
                inode.lock = handle.description
                return .success(())
            })
    }

    func restrictToOwner() {}

    func duplicate() -> Result<any DownloadFile, POSIXError> {
        disk.withLock { $0.duplicate(id) }.map { MemoryFile(disk: disk, id: $0, folder: folder) }
    }

    func close() {
        disk.withLock { $0.close(id) }
    }
}
