import Dispatch

/// Where time-based operators (`delay`, `timeout`, `retry`'s backoff) get their clock and timers.
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

    public init(cancel: @escaping @Sendable () -> Void) {
        self.onCancel = cancel
    }

    /// Prevents the action from running, if it has not started yet.
    public func cancel() {
        onCancel()
    }
}

/// GCD timers: actions run on `queue` after their delay.
public struct DispatchScheduler: JobScheduler {
    public let queue: DispatchQueue

    public init(queue: DispatchQueue = .global()) {
        self.queue = queue
    }

    public var now: Duration {
        .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let isCancelled = LockedBox.make(false)
        queue.asyncAfter(deadline: .now() + delay.dispatchInterval) {
            if !isCancelled.withLock({ $0 }) { action() }
        }
        return ScheduledAction { isCancelled.withLock { $0 = true } }
    }
}

extension JobScheduler where Self == DispatchScheduler {
    /// GCD timers on the global queue.
    public static var dispatch: DispatchScheduler { DispatchScheduler() }
}

extension Duration {
    /// The same span for GCD, in nanoseconds (negative spans count as zero).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow else { return .never }
        return .nanoseconds(Int(max(0, nanoseconds.partialValue + attoseconds / 1_000_000_000)))
    }
}
