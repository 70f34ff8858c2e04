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
/// a SIGINT between `init` and then was ignored, and the command ran on to its end.) The second
/// SIGINT ends the process in the handler itself (`_exit(130)`), even while the main queue is busy.
/// Without a pipe (no descriptor left), SIGINT keeps its default action.
@MainActor
final class InterruptSignal {
    private let source: (any DispatchSourceRead)?

    /// Starts listening; `handler` runs on the main actor after the first SIGINT.
    init(_ handler: @escaping @MainActor @Sendable () -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            source = nil
            return
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        let reading = ends[0]
        let source = DispatchSource.makeReadSource(fileDescriptor: reading, queue: .main)
        source.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            let signals = bytes.withUnsafeMutableBytes { read(reading, $0.baseAddress, $0.count) }
            if signals > 0 { Task { @MainActor in handler() } }
        }
        source.resume()
        self.source = source
        interruptCount = 0
        interruptPipe = ends[1]
        signal(SIGINT, onInterrupt)
    }

    /// Stops listening: SIGINT ends the process again. The pipe stays open (two descriptors, once per
    /// command): a handler that began before this cannot write into a descriptor reused meanwhile.
    func cancel() {
        signal(SIGINT, SIG_DFL)
        source?.cancel()
    }
}

/// The pipe's write end once an `InterruptSignal` is installed, and the SIGINTs it has had.
// Safety: written on the main actor before the handler is installed; the handler, which runs one at
// a time (SIGINT is blocked while its handler runs), reads the pipe and counts.
nonisolated(unsafe) private var interruptPipe: Int32 = -1
nonisolated(unsafe) private var interruptCount = 0

/// The SIGINT handler: the first one a byte down the pipe, the second `_exit(130)` (both
/// async-signal-safe), errno kept as it was.
private func onInterrupt(_: Int32) {
    interruptCount += 1
    if interruptCount >= 2 { _exit(CommandLineError.interrupted.rawValue) }
    let saved = errno
    var byte: UInt8 = 1
    _ = write(interruptPipe, &byte, 1)
    errno = saved
}
