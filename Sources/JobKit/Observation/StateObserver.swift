import Dispatch

/// Delivers a run's states to one watcher on its queue, one at a time and in the order the run
/// decided them — even when the queue is concurrent and transitions race on several threads.
///
/// States are appended under the run's lock (only this observer's own lock is taken inside it) and
/// drained by a single block on `queue` at a time. Progress is coalesced: while a delivery is
/// pending, a newer `.running` state replaces an undelivered one, so at most one progress delivery
/// waits per observer however fast the run reports. `pending` and the final state are never dropped.
final class StateObserver: Sendable {
    private let queue: DispatchQueue
    private let deliver: @Sendable (JobState) -> Void
    private let buffer = LockedBox.make(StateObserverBuffer())

    init(queue: DispatchQueue, deliver: @escaping @Sendable (JobState) -> Void) {
        self.queue = queue
        self.deliver = deliver
    }

    /// Queues `state` for delivery; called under the run's lock, so states queue in the run's order.
    /// Returns `true` when the caller must call `scheduleDrain()` once it has released that lock.
    func append(_ state: JobState) -> Bool {
        buffer.withLock { $0.append(state) }
    }

    /// Starts delivering the queued states on the observer's queue.
    func scheduleDrain() {
        queue.async { self.drain() }
    }

    /// Ends the observation: no delivery starts after this returns (one in progress may finish).
    func stop() {
        buffer.withLock { $0.stop() }
    }

    /// Delivers the queued states, in order, until none is left or the observation stopped. Called by
    /// the drain `scheduleDrain()` queues (and, in tests, directly: the state machines' explorers).
    func drain() {
        while let state = buffer.withLock({ $0.next() }) {
            deliver(state)
        }
    }
}

/// The states waiting for one observer, as a value.
struct StateObserverBuffer {
    private var states: [JobState] = []
    private var head = 0
    private var isDraining = false
    private var isStopped = false

    /// Queues `state`, replacing an undelivered progress state with a newer one. Returns `true`
    /// when a drain must be scheduled.
    mutating func append(_ state: JobState) -> Bool {
        guard !isStopped else { return false }
        if case .running = state, head < states.count, case .running = states[states.count - 1] {
            states[states.count - 1] = state
        } else {
            states.append(state)
        }
        guard !isDraining else { return false }
        isDraining = true
        return true
    }

    /// The next state to deliver, or nil (and the drain ends) when there is none.
    mutating func next() -> JobState? {
        guard !isStopped, head < states.count else {
            states = []
            head = 0
            isDraining = false
            return nil
        }
        let state = states[head]
        head += 1
        if head == states.count {
            states.removeAll(keepingCapacity: true)
            head = 0
        }
        return state
    }

    mutating func stop() {
        isStopped = true
        states = []
        head = 0
    }

    /// How many states wait (for tests).
    var count: Int { states.count - head }
}
