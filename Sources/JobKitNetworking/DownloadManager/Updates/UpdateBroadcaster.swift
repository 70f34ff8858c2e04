import JobKit

/// The consumers of `DownloadManager.updates()`, behind a lock: the manager feeds it each delivery
/// (on the result queue, after the lock of its state is released), each consumer pulls from it at
/// its own pace. Continuations are resumed only once the lock is released.
///
/// Lock order: the manager's state lock, then this one (`subscribe` is called under the state lock,
/// so that a consumer's snapshot and its registration are one step); never the other way.
final class UpdateBroadcaster: Sendable {
    typealias Waiter = CheckedContinuation<DownloadManager.Update?, Never>
    typealias Machine = UpdateBroadcastStateMachine<Waiter>

    private let state = LockedBox<Machine>.make(Machine())

    /// Registers a consumer (see `UpdateBroadcastStateMachine.subscribe`). Resumes nothing: it may
    /// be called under another lock.
    func subscribe(initial: DownloadManager.Update, after cut: Machine.Cut) -> Machine.ConsumerID? {
        state.withLock { $0.subscribe(initial: initial, after: cut) }
    }

    /// Feeds a delivery to every consumer.
    func deliver(_ delivery: Machine.Delivery) {
        let resumes = state.withLock { $0.deliver(delivery) }
        for (waiter, update) in resumes { waiter.resume(returning: update) }
    }

    /// Ends every consumer (each still gets what it holds).
    func finish() {
        let waiters = state.withLock { $0.finish() }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// Removes the consumer `id`, resuming its waiter with nil.
    func cancel(_ id: Machine.ConsumerID) {
        state.withLock { $0.cancel(id) }?.resume(returning: nil)
    }

    /// The next update of consumer `id`, waiting for a delivery if it has none; nil at the end, or
    /// once the awaiting task is cancelled (the consumer is then removed).
    func next(_ id: Machine.ConsumerID) async -> DownloadManager.Update? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                switch state.withLock({ $0.next(id, waiter) }) {
                case .deliver(let update): waiter.resume(returning: update)
                case .end: waiter.resume(returning: nil)
                case .wait: break
                }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// How many consumers are registered (for tests).
    var consumerCount: Int { state.withLock { $0.consumerCount } }
}

/// One consumer of a broadcaster, held by an iterator of `updates()`: releasing it removes the
/// consumer with what it held.
final class UpdateSubscription: Sendable {
    private let broadcaster: UpdateBroadcaster
    /// Nil for a sequence that ended before it began (the manager was closed).
    private let id: UpdateBroadcaster.Machine.ConsumerID?

    init(broadcaster: UpdateBroadcaster, id: UpdateBroadcaster.Machine.ConsumerID?) {
        self.broadcaster = broadcaster
        self.id = id
    }

    func next() async -> DownloadManager.Update? {
        guard let id else { return nil }
        return await broadcaster.next(id)
    }

    deinit {
        if let id { broadcaster.cancel(id) }
    }
}
