import JobKit
import NIOCore

/// A `JobScheduler` on a SwiftNIO event loop's clock: each action runs on the loop, from its own
/// timer heap — no timer source, no thread woken to arm one. What a transfer's silence check uses
/// unless a test gives it a clock.
struct EventLoopScheduler: JobScheduler {
    let eventLoop: any EventLoop

    var now: Duration { .nanoseconds(Int64(clamping: NIODeadline.now().uptimeNanoseconds)) }

    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        // As `DispatchScheduler`: a negative delay fires at once, one too long for the clock never.
        let nanoseconds = delay.nanoseconds
        guard nanoseconds < 1 << 62 else { return ScheduledAction {} }
        let task = eventLoop.scheduleTask(in: .nanoseconds(Int64(nanoseconds))) { action() }
        return ScheduledAction { task.cancel() }
    }
}
