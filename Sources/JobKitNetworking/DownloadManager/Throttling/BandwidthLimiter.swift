import JobKit

/// Speed limits for the transfers of one owner (a `DownloadManager`): an overall one, shared by
/// every transfer, and one per key (an item), each a `TokenBucket`, changeable at any time.
///
/// A transfer tells the limiter of each chunk it read (`consumed`); when a bucket is in debt, the
/// transfer reads its next chunk only when `resume` is called — a timer of the owner's
/// `JobScheduler`, not a sleeping thread. Debts are paid in the order they were made (each read's
/// mark, see `TokenBucket.owe`): every running transfer reads one chunk in turn, so the overall limit is shared evenly
/// among them (by chunks; an item with a lower limit of its own, or a slower server, leaves the
/// rest to the others). A change of a limit wakes the transfers it concerns at once, to wait
/// again at the new rate (or not at all).
///
/// **Threading.** Every method may be called from any thread. `resume` runs once, on a thread of
/// the scheduler's, with no lock held — or never, when the wait is cancelled first.
package final class BandwidthLimiter<Key: Hashable & Sendable>: Sendable {
    /// One transfer's wait for its next read.
    package struct Wait: Hashable, Sendable {
        fileprivate let id: Int
    }

    private struct Waiter {
        var key: Key
        /// Where the overall bucket's and the key's own bucket's `earned` pay its read (nil: paid).
        var overallMark: Double?
        var itemMark: Double?
        var resume: @Sendable () -> Void
        /// Its timer, once armed; a firing of an older one (before a change re-armed it) is ignored.
        var timer: ScheduledAction?
        var generation = 0
    }

    private struct State {
        var overall: TokenBucket
        var items: [Key: TokenBucket] = [:]
        var waiters: [Int: Waiter] = [:]
        var nextID = 0

        /// Nanoseconds until `waiter` may read again: until both its marks are paid.
        mutating func delay(for waiter: Waiter, now: UInt64) -> UInt64 {
            var delay = overall.wait(until: waiter.overallMark, now: now)
            if var bucket = items[waiter.key] {
                delay = max(delay, bucket.wait(until: waiter.itemMark, now: now))
                items[waiter.key] = bucket
            }
            return delay
        }

        /// Looks again at the waiters `ids` (after a change): each is resumed or waits anew, in the
        /// order given (the callers give them in the order they began to wait: the same run repeats).
        mutating func reconsider(_ ids: [Int], now: UInt64) -> [Effect] {
            ids.compactMap { id in
                guard var waiter = waiters[id] else { return nil }
                let delay = delay(for: waiter, now: now)
                let old = waiter.timer
                guard delay > 0 else {
                    waiters[id] = nil
                    return Effect(cancel: old, resume: waiter.resume, arm: nil)
                }
                waiter.generation += 1
                waiter.timer = nil
                waiters[id] = waiter
                return Effect(cancel: old, resume: nil, arm: (id, waiter.generation, delay))
            }
        }
    }

    /// What a decision under the lock asks, done after it.
    private struct Effect {
        var cancel: ScheduledAction?
        var resume: (@Sendable () -> Void)?
        var arm: (id: Int, generation: Int, delay: UInt64)?
    }

    private let scheduler: any JobScheduler
    private let state: LockedBox<State>

    /// A limiter with this overall limit in bytes a second (nil, zero or negative: none), on
    /// `scheduler`'s clock and timers.
    init(overall: Int64?, scheduler: any JobScheduler) {
        self.scheduler = scheduler
        state = .make(State(overall: TokenBucket(rate: overall, now: DownloadManager.now(scheduler))))
    }

    /// The overall limit; nil: none.
    var overall: Int64? { state.withLock { $0.overall.rate } }

    /// The limit of `key`; nil: none of its own.
    func limit(for key: Key) -> Int64? { state.withLock { $0.items[key]?.rate } }

    /// Changes the overall limit (nil, zero or negative: none); waiting transfers wait anew.
    func setOverall(_ rate: Int64?) {
        let now = now()
        run(
            state.withLock { state in
                state.overall.setRate(rate, now: now)
                return state.reconsider(state.waiters.keys.sorted(), now: now)
            })
    }

    /// Changes the limit of `key` (nil, zero or negative: none of its own); its waiting transfers
    /// wait anew. A new limit starts with a full bucket.
    func setLimit(_ rate: Int64?, for key: Key) {
        let now = now()
        run(
            state.withLock { state in
                if let rate = TokenBucket.limit(rate) {
                    if state.items[key] == nil {
                        state.items[key] = TokenBucket(rate: rate, now: now)
                    } else {
                        state.items[key]?.setRate(rate, now: now)
                    }
                } else {
                    state.items[key] = nil
                    for (id, waiter) in state.waiters where waiter.key == key { state.waiters[id]?.itemMark = nil }
                }
                return state.reconsider(state.waiters.filter { $0.value.key == key }.map(\.key).sorted(), now: now)
            })
    }

    /// Removes every key's own limit; their waiting transfers wait anew.
    func removeItemLimits() {
        let now = now()
        run(
            state.withLock { state in
                state.items = [:]
                for id in state.waiters.keys { state.waiters[id]?.itemMark = nil }
                return state.reconsider(state.waiters.keys.sorted(), now: now)
            })
    }

    /// `bytes` were just read by a transfer of `key`. Returns nil when the next read may start at
    /// once; else the wait, at whose end `resume` is called (once; never if the wait is cancelled).
    func consumed(_ bytes: Int, by key: Key, resume: @escaping @Sendable () -> Void) -> Wait? {
        let now = now()
        let armed = state.withLock { state -> (id: Int, delay: UInt64)? in
            var waiter = Waiter(key: key, resume: resume)
            waiter.overallMark = state.overall.owe(bytes, now: now)
            waiter.itemMark = state.items[key]?.owe(bytes, now: now)
            let delay = state.delay(for: waiter, now: now)
            guard delay > 0 else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.waiters[id] = waiter
            return (id, delay)
        }
        guard let armed else { return nil }
        arm(armed.id, generation: 0, after: armed.delay)
        return Wait(id: armed.id)
    }

    /// Calls off `wait`: its `resume` is not called (unless it already was).
    func cancel(_ wait: Wait) {
        state.withLock { $0.waiters.removeValue(forKey: wait.id) }?.timer?.cancel()
    }

    private func arm(_ id: Int, generation: Int, after delay: UInt64) {
        let timer = scheduler.schedule(after: .nanoseconds(Int64(clamping: delay))) { [weak self] in
            self?.fire(id, generation: generation)
        }
        let stale = state.withLock { state -> Bool in
            guard state.waiters[id]?.generation == generation else { return true }
            state.waiters[id]?.timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    private func fire(_ id: Int, generation: Int) {
        let now = now()
        run(
            state.withLock { state in
                guard state.waiters[id]?.generation == generation else { return [] }
                state.waiters[id]?.timer = nil
                return state.reconsider([id], now: now)
            })
    }

    private func run(_ effects: [Effect]) {
        for effect in effects {
            effect.cancel?.cancel()
            if let arm = effect.arm { self.arm(arm.id, generation: arm.generation, after: arm.delay) }
            effect.resume?()
        }
    }

    private func now() -> UInt64 { DownloadManager.now(scheduler) }
}
