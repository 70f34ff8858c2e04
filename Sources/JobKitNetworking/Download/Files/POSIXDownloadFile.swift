import Dispatch
import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open file descriptor of a `DirectoryHandle`'s file: each call is the system call it names.
///
/// The descriptor is closed by `close()` only (as a descriptor is): its owner decides when.
package final class POSIXDownloadFile: DownloadFile {
    /// The descriptor, open until `close()`.
    let descriptor: Int32
    /// Where it was opened, for `DiskSync`'s record.
    let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    package func size() -> Int64? {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : nil
    }

    package func identity() -> FileIdentity? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    package func write(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        POSIXFile.writeAll(bytes, to: descriptor)
    }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count < 0 ? errno : EIO }
            done += count
        }
        return nil
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, POSIXError> {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return .success(count) }
            if errno != EINTR { return .failure(POSIXError(SystemCall.lastError())) }
        }
    }

    package func truncate(to length: Int64) -> Int32? {
        ftruncate(descriptor, off_t(length)) == 0 ? nil : errno
    }

    package func seek(to offset: Int64) -> Int32? {
        lseek(descriptor, off_t(offset), SEEK_SET) == off_t(offset) ? nil : errno
    }

    package func sync() -> Int32? {
        DiskSync.sync(descriptor, path: path) ? nil : errno
    }

    package func lockExclusively(until deadline: UInt64) -> Int32? {
        SystemCall.lockExclusively(descriptor, until: deadline)
    }

    package func restrictToOwner() {
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & 0o077 != 0 { _ = fchmod(descriptor, 0o600) }
    }

    package func duplicate() -> Result<any DownloadFile, POSIXError> {
        let copy = dup(descriptor)
        guard copy >= 0 else { return .failure(POSIXError(SystemCall.lastError())) }
        return .success(POSIXDownloadFile(descriptor: copy, path: path))
    }

    package func close() {
        SystemCall.close(descriptor)
    }
}
