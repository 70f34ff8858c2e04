import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes a trace's bytes through a path, as a shell's `>` does: into the file it names (created if
/// missing, emptied if not), through a symbolic link, into a pipe or a device such as `/dev/stdout`.
/// Not an atomic replace: that would swap a link, a pipe or a device node for a new regular file.
enum TraceFile {
    /// Writes `data` to `url`; throws the system's error (a missing folder, a directory, a full disk).
    static func write(_ data: Data, to url: URL) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw posixError(errno, url) }
        defer { close(descriptor) }
        if let failure = data.withUnsafeBytes({ POSIXFile.writeAll($0, to: descriptor) }) {
            throw posixError(failure, url)
        }
    }

    private static func posixError(_ code: Int32, _ url: URL) -> any Error {
        CocoaError(
            .fileWriteUnknown,
            userInfo: [
                NSFilePathErrorKey: url.path,
                NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO),
                NSLocalizedDescriptionKey: "cannot write \(url.path): \(String(cString: strerror(code)))",
            ])
    }
}
