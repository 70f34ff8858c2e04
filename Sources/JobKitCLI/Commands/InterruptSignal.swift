import Dispatch
import Foundation
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ctrl-C (SIGINT) for a command that stops cleanly: the first one calls `handler` on the main actor,
/// once; a second one exits with 130 at once, for a user who will not wait.
///
/// While it is installed, the default action of SIGINT (ending the process) is replaced; `cancel()`
/// restores it. Installed and cancelled on the main actor.
///
/// No SIGINT is lost, however early it comes: the process's handler is in place when `init` returns,
/// and writes a byte to a pipe (one `write`, safe in a signal handler), which a dispatch source reads
/// on the main queue. (A dispatch signal source alone is armed later, on libdispatch's own thread:
/// a SIGINT between `init` and then was ignored, and the command ran on to its end.)
@MainActor
final class InterruptSignal {
    private let source: any DispatchSourceRead
    private let count = LockedBoxCounter()

    /// Starts listening; `handler` runs on the main actor after the first SIGINT.
    init(_ handler: @escaping @MainActor @Sendable () -> Void) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { ends = [-1, -1] }
        for end in ends where end >= 0 {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        let (reading, writing) = (ends[0], ends[1])
        interruptPipe = writing
        source = DispatchSource.makeReadSource(fileDescriptor: reading, queue: .main)
        let count = self.count
        source.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            let signals = bytes.withUnsafeMutableBytes { read(reading, $0.baseAddress, $0.count) }
            for _ in 0..<max(signals, 0) {
                if count.increment() == 1 {
                    Task { @MainActor in handler() }
                } else {
                    exit(CommandLineError.interrupted.rawValue)
                }
            }
        }
        source.setCancelHandler {
            _ = close(reading)
            _ = close(writing)
        }
        source.resume()
        signal(SIGINT, onInterrupt)
    }

    /// Stops listening: SIGINT ends the process again.
    func cancel() {
        signal(SIGINT, SIG_DFL)
        interruptPipe = -1
        source.cancel()
    }
}

/// The pipe's write end while an `InterruptSignal` is installed, else -1.
// Safety: set on the main actor only, before the handler is installed and after it is removed; the
// handler only reads it.
nonisolated(unsafe) private var interruptPipe: Int32 = -1

/// The SIGINT handler: one byte down the pipe (async-signal-safe), errno kept as it was.
private func onInterrupt(_: Int32) {
    let saved = errno
    var byte: UInt8 = 1
    if interruptPipe >= 0 { _ = write(interruptPipe, &byte, 1) }
    errno = saved
}
