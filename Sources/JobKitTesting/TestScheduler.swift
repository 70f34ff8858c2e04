import Foundation
import JobKit

/// A `JobScheduler` whose time moves only when a test says so.
///
/// **Threading.** Scheduled actions run synchronously inside `advance(by:)` / `run()`, in time order (actions due
/// at the same time in the order they were scheduled), on the caller's thread. Time never moves by
/// itself, so a test of a 30-second timeout or an exponential backoff runs instantly. Times saturate
/// at 2⁶² seconds (about 146 billion years) instead of overflowing: deadlines beyond it coincide.
///
/// ```swift
/// let scheduler = TestScheduler()
/// let handle = slowJob.timeout(.seconds(30), scheduler: scheduler).perform(resultQueue: queue) { ... }
/// await scheduler.waitUntilScheduled()   // the job's body has armed its timer
/// scheduler.advance(by: .seconds(30))    // the timeout fires now
/// ```
public final class TestScheduler: JobScheduler, Sendable {
    private struct Entry {
        let time: Duration
        let sequence: Int
        let action: @Sendable () -> Void
    }

    private struct State {
        var now: Duration = .zero
        var nextSequence = 0
        var entries: [Entry] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// All mutable state, behind JobKit's lock; actions run with the lock released.
    private let state = LockedBox.make(State())

    /// A scheduler at time zero with nothing scheduled.
    public init() {}

    public var now: Duration {
        state.withLock { state in state.now }
    }

    /// How many actions wait to run.
    public var scheduledCount: Int {
        state.withLock { state in state.entries.count }
    }

    /// The delays, from now, of the actions waiting to run, soonest first.
    public var scheduledDelays: [Duration] {
        state.withLock { state in state.entries.map { $0.time - state.now } }
    }

    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let (sequence, ready) = state.withLock { (state: inout State) -> (Int, [CheckedContinuation<Void, Never>]) in
            let sequence = state.nextSequence
            state.nextSequence += 1
            let entry = Entry(time: state.now.saturatingAdding(max(delay, .zero)), sequence: sequence, action: action)
            let index = state.entries.firstIndex { ($0.time, $0.sequence) > (entry.time, entry.sequence) }
            state.entries.insert(entry, at: index ?? state.entries.endIndex)
            let count = state.entries.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return (sequence, ready)
        }
        for continuation in ready { continuation.resume() }
        return ScheduledAction { [weak self] in
            guard let self else { return }
            state.withLock { state in state.entries.removeAll { $0.sequence == sequence } }
        }
    }

    /// Moves time forward by `duration`, running every action that falls due, in order.
    public func advance(by duration: Duration = .zero) {
        let target = state.withLock { state in state.now.saturatingAdding(duration) }
        while let action = takeNext(dueBy: target) { action() }
        state.withLock { state in state.now = max(state.now, target) }
    }

    /// Runs every scheduled action, moving time to each in turn, until none is left.
    public func run() {
        while let action = takeNext(dueBy: nil) { action() }
    }

    /// Suspends until at least `count` actions are scheduled — for example until a job's body, which
    /// runs on a dispatch queue, has armed its timer.
    public func waitUntilScheduled(_ count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { (state: inout State) -> Bool in
                if state.entries.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func takeNext(dueBy target: Duration?) -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard let first = state.entries.first, target.map({ first.time <= $0 }) ?? true else { return nil }
            state.entries.removeFirst()
            state.now = max(state.now, first.time)
            return first.action
        }
    }
}
