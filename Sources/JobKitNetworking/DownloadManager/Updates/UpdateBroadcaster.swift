import JobKit

/// The consumers of `DownloadManager.updates()`: the manager feeds it each delivery (on the result
/// queue), each consumer pulls from it at its own pace. Continuations are resumed only once the lock
/// is released.
///
/// Its state machine lives in the manager's (`DownloadManagerStateMachine.consumers`), behind the
/// manager's one lock: a consumer's snapshot and its registration are one step, and whether a
/// delivery is built for consumers is decided in the same step as the delivery, with no second lock
/// taken inside the first. A broadcaster of its own (`init()`, for its tests) has a lock of its own.
final class UpdateBroadcaster<State: Sendable>: Sendable {
    typealias Waiter = CheckedContinuation<DownloadManager.Update?, Never>
    typealias Machine = UpdateBroadcastStateMachine<Waiter>

    private let machine: any WritableKeyPath<State, Machine> & Sendable
    private let state: LockedBox<State>

    /// The broadcaster whose machine is `state`'s `machine`, behind `state`'s lock.
    init(state: LockedBox<State>, machine: any WritableKeyPath<State, Machine> & Sendable) {
        self.state = state
        self.machine = machine
    }

    /// Registers a consumer (see `UpdateBroadcastStateMachine.subscribe`). Resumes nothing: it may
    /// be called under another lock.
    func subscribe(initial: DownloadManager.Update, after cut: Machine.Cut) -> Machine.ConsumerID? {
        state.withLock { $0[keyPath: machine].subscribe(initial: initial, after: cut) }
    }

    /// Feeds a delivery to every consumer.
    func deliver(_ delivery: Machine.Delivery) {
        let resumes = state.withLock { $0[keyPath: machine].deliver(delivery) }
        for (waiter, update) in resumes { waiter.resume(returning: update) }
    }

    /// Ends every consumer (each still gets what it holds).
    func finish() {
        let waiters = state.withLock { $0[keyPath: machine].finish() }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// Removes the consumer `id`, resuming its waiter with nil.
    func cancel(_ id: Machine.ConsumerID) {
        state.withLock { $0[keyPath: machine].cancel(id) }?.resume(returning: nil)
    }

    /// The next update of consumer `id`, waiting for a delivery if it has none; nil at the end, or
    /// once the awaiting task is cancelled (the consumer is then removed).
    func next(_ id: Machine.ConsumerID) async -> DownloadManager.Update? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                switch state.withLock({ $0[keyPath: machine].next(id, waiter) }) {
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
    var consumerCount: Int { state.withLock { $0[keyPath: machine].consumerCount } }
}

extension UpdateBroadcaster
where State == UpdateBroadcastStateMachine<CheckedContinuation<DownloadManager.Update?, Never>> {
    /// A broadcaster with a lock of its own.
    convenience init() {
        self.init(state: .make(Machine()), machine: \.self)
    }
}

/// One consumer of a broadcaster, held by an iterator of `updates()`: releasing it removes the
/// consumer with what it held.
final class UpdateSubscription<State: Sendable>: Sendable {
    private let broadcaster: UpdateBroadcaster<State>
    /// Nil for a sequence that ended before it began (the manager was closed).
    private let id: UpdateBroadcaster<State>.Machine.ConsumerID?

    init(broadcaster: UpdateBroadcaster<State>, id: UpdateBroadcaster<State>.Machine.ConsumerID?) {
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
