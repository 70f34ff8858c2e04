import Dispatch
import Foundation

/// Warns when a handler waits on a main queue that nothing services.
///
/// **Threading.** `threshold` may be read and set at any time, from any thread; the warning is written from a
/// background queue, never the main one.
///
/// Handlers run on the main queue by default. In a command-line tool or a server, nothing drains
/// the main queue unless the program calls `dispatchMain()`, runs `RunLoop.main`, or has an async
/// `main` — and then handlers silently never run. When a handler has waited on the main queue longer
/// than `threshold`, JobKit prints one warning per process to standard error, naming the fix.
///
/// On by default in debug builds (2 seconds), off in release builds. Configure it per process, at
/// any time, from any thread:
///
/// ```swift
/// MainQueueWatchdog.threshold = .seconds(5)   // or nil to turn it off
/// ```
///
/// The environment variable `JOBKIT_MAIN_WATCHDOG` sets the starting value: a number of seconds up to
/// 86,400, or `off` (or 0). Any other value — `inf`, `nan`, `-1`, a typo — is ignored, with one line
/// on standard error that names it.
public enum MainQueueWatchdog {
    private struct State {
        var threshold: Duration?
        var hasWarned = false
    }

    private static let state = LockedBox.make(State(threshold: initialThreshold()))

    /// How long a handler may wait on the main queue before the warning; nil turns the watchdog off.
    public static var threshold: Duration? {
        get { state.withLock { $0.threshold } }
        set { state.withLock { $0.threshold = newValue } }
    }

    /// The warning text.
    static func message(after threshold: Duration) -> String {
        """
        JobKit warning: a job's handler has waited on the main queue for \(threshold) and has not run. \
        Nothing is servicing the main queue in this process. Call dispatchMain() (or run \
        RunLoop.main.run(), or use an async main), or pass another queue: perform(resultQueue: ...).

        """
    }

    /// Delivers `block` on `queue`, watched when `queue` is the main queue and the watchdog is on.
    @inline(__always)
    static func deliver(on queue: DispatchQueue, _ block: @escaping @Sendable () -> Void) {
        guard queue.label == mainQueueLabel, let threshold = state.withLock({ $0.hasWarned ? nil : $0.threshold })
        else {
            queue.async(execute: block)
            return
        }
        let delivered = LockedBox.make(false)
        queue.async {
            delivered.withLock { $0 = true }
            block()
        }
        DispatchQueue.global().asyncAfter(deadline: DispatchTime.now().adding(threshold)) {
            guard !delivered.withLock({ $0 }) else { return }
            let shouldWarn = state.withLock { state -> Bool in
                guard !state.hasWarned, state.threshold != nil else { return false }
                state.hasWarned = true
                return true
            }
            if shouldWarn { FileHandle.standardError.write(Data(message(after: threshold).utf8)) }
        }
    }

    private static let mainQueueLabel = DispatchQueue.main.label

    private static func initialThreshold() -> Duration? {
        let reading = thresholdSetting(ProcessInfo.processInfo.environment[environmentVariable])
        switch reading {
        case .unset, .invalid:
            _ = reading.reportingInvalid()
            #if DEBUG
                return .seconds(2)
            #else
                return nil
            #endif
        case .number(let seconds):
            return seconds > 0 ? .seconds(seconds) : nil
        }
    }

    /// The variable that sets the starting threshold.
    static let environmentVariable = "JOBKIT_MAIN_WATCHDOG"

    /// What `text`, the variable's value, asks for: a number of seconds (0 for `off` and `0`), nothing,
    /// or an invalid value to ignore.
    static func thresholdSetting(_ text: String?) -> EnvironmentValue {
        if text == "off" { return .number(0) }
        return EnvironmentValue.parse(
            text, named: environmentVariable, in: 0...86_400, expected: "off or a duration in seconds")
    }
}
