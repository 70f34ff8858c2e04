import Dispatch
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The system calls of the downloads and the journal that need a wrapper, in one place: the C
/// library's module differs per platform, and inside a type with an `open` or `close` of its own
/// (`DirectoryHandle`, `PartFile`, `JournalFile`) an unqualified call means the type's method.
enum SystemCall {
    /// How long a busy `flock` is tried again before the file counts as held by someone else: a
    /// quarter second. A child process being started (by this process, or the one that held the
    /// lock) shares the descriptors until it runs its program, and keeps a lock that was just let
    /// go of until then.
    static let lockPatience: UInt64 = 250_000_000

    /// `openat(2)`: the descriptor, or -1 with `errno` set.
    static func open(at directory: Int32, _ name: String, _ flags: Int32, mode: mode_t) -> Int32 {
        #if canImport(Darwin)
            Darwin.openat(directory, name, flags, mode)
        #elseif canImport(Glibc)
            Glibc.openat(directory, name, flags, mode)
        #else
            Musl.openat(directory, name, flags, mode)
        #endif
    }

    /// `close(2)`. Its result is not looked at: the descriptor is gone either way.
    static func close(_ descriptor: Int32) {
        #if canImport(Darwin)
            _ = Darwin.close(descriptor)
        #elseif canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Musl.close(descriptor)
        #endif
    }

    /// `errno` now, as a code (`EIO` for one the overlay does not know).
    static func lastError() -> POSIXErrorCode { POSIXErrorCode(rawValue: errno) ?? .EIO }

    /// The system's words for `code` (`strerror`): `No such file or directory`.
    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Takes the exclusive `flock` of `descriptor` without blocking, trying again every 5 ms while
    /// it is busy (or interrupted) until `deadline` (`DispatchTime` nanoseconds) has passed.
    ///
    /// - Returns: nil once locked; `EWOULDBLOCK` when the lock was still busy at the deadline; any
    ///   other `errno` at once.
    static func lockExclusively(_ descriptor: Int32, until deadline: UInt64) -> Int32? {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else { return code }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { return EWOULDBLOCK }
            usleep(5_000)
        }
        return nil
    }
}
