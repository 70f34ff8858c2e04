import Dispatch

/// Where time-based operators (`delay`, `timeout`, `retry`'s backoff) get their clock and timers.
///
/// **Threading.** A scheduler is called from any thread, concurrently: `now` and `schedule` must be
/// thread-safe, and each action runs once, on a thread of the scheduler's choosing, with no JobKit lock held.
///
/// The default is `DispatchScheduler` (GCD timers on the monotonic clock). Tests pass a
/// `TestScheduler` (from `JobKitTesting`) to move time by hand: timeouts, delays and backoff
/// schedules then run instantly and deterministically.
public protocol JobScheduler: Sendable {
    /// The current time, as a duration since the scheduler's own origin.
    var now: Duration { get }

    /// Runs `action` once, `delay` from now, on a thread of the scheduler's choosing, with no lock held.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction
}

/// A scheduled action that can still be called off.
public struct ScheduledAction: Sendable {
    private let onCancel: @Sendable () -> Void

    /// A handle whose `cancel()` calls `cancel`; a `JobScheduler` returns one for each action it
    /// schedules. `cancel` may be called more than once, from any thread, and must then do nothing.
    public init(cancel: @escaping @Sendable () -> Void) {
        self.onCancel = cancel
    }

    /// Prevents the action from running, if it has not started yet.
    public func cancel() {
        onCancel()
    }
}

/// GCD timers: actions run on `queue` after their delay.
///
/// **Threading.** A `Sendable` value, used from any thread; each action runs once on `queue`.
///
/// Each action is a one-shot `DispatchSourceTimer`. Cancelling it cancels the source, which
/// releases the action (and everything it captured) at once — not at the deadline — so a finished
/// `timeout(.seconds(3600))` holds no memory for an hour. Delays saturate: one too long for the clock
/// never fires; a negative one fires at once.
public struct DispatchScheduler: JobScheduler {
    /// The queue the scheduled actions run on.
    public let queue: DispatchQueue

    /// A scheduler whose actions run on `queue` (a global concurrent queue unless told otherwise).
    public init(queue: DispatchQueue = .global()) {
        self.queue = queue
    }

    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let source = UncheckedTimer(timer)
        timer.setEventHandler {
            // Cancelling first releases this handler (and `action`) once it returns.
            source.timer.cancel()
            action()
        }
        timer.schedule(deadline: DispatchTime.now().adding(delay))
        timer.activate()
        return ScheduledAction { source.timer.cancel() }
    }
}

/// A timer source, handed to its own handler and to its `ScheduledAction`.
// Safety: `DispatchSourceTimer` is thread-safe: it is only cancelled through this box, which GCD
// allows from any thread, any number of times.
private struct UncheckedTimer: @unchecked Sendable {
    let timer: any DispatchSourceTimer

    init(_ timer: any DispatchSourceTimer) { self.timer = timer }
}

extension JobScheduler where Self == DispatchScheduler {
    /// GCD timers on the global queue.
    public static var dispatch: DispatchScheduler { DispatchScheduler() }
}

extension Duration {
    /// The span in whole nanoseconds, saturated to `0...UInt64.max`: never traps, whatever its size.
    var saturatingNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || carry ? .max : total
    }

    /// `self + other`, kept within ±2⁶² seconds (about 146 billion years), so that the sum and its
    /// `components` never trap.
    package func saturatingAdding(_ other: Duration) -> Duration {
        let sum = Double(components.seconds) + Double(other.components.seconds)
        guard abs(sum) < 4e18 else { return sum > 0 ? .seconds(Int64.max / 2) : .seconds(Int64.min / 2) }
        return self + other
    }
}

extension DispatchTime {
    /// This time plus `delay`, saturated to `distantFuture`; a negative delay counts as zero.
    ///
    /// GCD reads a deadline at or above 2⁶³ ns as a wall-clock time (one in the past: it would fire at
    /// once), so anything from 2⁶² ns (146 years of uptime) on is `distantFuture`.
    func adding(_ delay: Duration) -> DispatchTime {
        let (deadline, overflow) = uptimeNanoseconds.addingReportingOverflow(delay.saturatingNanoseconds)
        return overflow || deadline >= 1 << 62 ? .distantFuture : DispatchTime(uptimeNanoseconds: deadline)
    }
}
