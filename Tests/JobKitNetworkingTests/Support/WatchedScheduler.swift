import JobKit
import JobKitTesting
import Testing

/// A `TestScheduler` whose timers a test can wait for: `until(_:_:)` suspends until a condition on
/// the delays scheduled holds, resumed by the `schedule` (or cancel, or `advance`) that makes it
/// true — as `TestScheduler.waitUntilScheduled(_:)` does for a count.
///
/// **Threading.** As `TestScheduler`: actions run inside `advance(by:)` and `run()`, on the caller's
/// thread, with no lock held.
///
/// ```swift
/// let scheduler = WatchedScheduler()
/// configuration.scheduler = scheduler
/// await scheduler.until("the retry waits for its backoff") { $0.contains(.seconds(10)) }
/// scheduler.advance(by: .seconds(10))
/// ```
final class WatchedScheduler: JobScheduler, Sendable {
    private let scheduler = TestScheduler()
    /// The delays from now of the actions waiting, soonest first, as of the last change.
    private let delays = Watched<[Duration]>([])

    var now: Duration { scheduler.now }

    /// The delays, from now, of the actions waiting to run, soonest first.
    var scheduledDelays: [Duration] { scheduler.scheduledDelays }

    /// How many actions wait to run.
    var scheduledCount: Int { scheduler.scheduledCount }

    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let scheduled = scheduler.schedule(after: delay, action)
        changed()
        return ScheduledAction { [self] in
            scheduled.cancel()
            changed()
        }
    }

    /// Moves time forward by `duration`, running every action that falls due (see `TestScheduler`).
    func advance(by duration: Duration = .zero) {
        scheduler.advance(by: duration)
        changed()
    }

    /// Runs every scheduled action until none is left (see `TestScheduler`).
    func run() {
        scheduler.run()
        changed()
    }

    /// Suspends until `condition` holds for the delays now scheduled (see `Watched.until`).
    @discardableResult
    func until(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (_ delays: [Duration]) -> Bool
    ) async -> Bool {
        await delays.until(what, sourceLocation: sourceLocation, condition)
    }

    /// Takes the scheduler's delays again. Read under the watched lock, so that two changes at once
    /// store them in the order they were read (the scheduler never calls out with its lock held).
    private func changed() {
        delays.withLock { $0 = scheduler.scheduledDelays }
    }
}
