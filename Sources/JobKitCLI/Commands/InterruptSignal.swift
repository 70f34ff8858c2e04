import Dispatch
import Foundation
import JobKit

/// Ctrl-C (SIGINT) for a command that stops cleanly: the first one calls `handler` on the main actor,
/// once; a second one exits with 130 at once, for a user who will not wait.
///
/// While it is installed, the default action of SIGINT (ending the process) is replaced; `cancel()`
/// restores it. Installed and cancelled on the main actor.
@MainActor
final class InterruptSignal {
    private let source: any DispatchSourceSignal
    private let count = LockedBoxCounter()

    /// Starts listening; `handler` runs on the main actor after the first SIGINT.
    init(_ handler: @escaping @MainActor @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
        let count = self.count
        source.setEventHandler {
            if count.increment() == 1 {
                Task { @MainActor in handler() }
            } else {
                exit(CommandLineError.interrupted.rawValue)
            }
        }
        source.resume()
    }

    /// Stops listening: SIGINT ends the process again.
    func cancel() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
