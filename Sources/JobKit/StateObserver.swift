import Dispatch

/// Delivers a run's states to one watcher on its queue, one at a time and in the order the run
/// decided them — even when the queue is concurrent and transitions race on several threads.
///
/// States are appended under the run's lock (only this observer's own lock is taken inside it) and
/// drained by a single block on `queue` at a time.
final class StateObserver: Sendable {
    private struct Buffer {
        var states: [JobState] = []
        var isDraining = false
    }

    private let queue: DispatchQueue
    private let deliver: @Sendable (JobState) -> Void
    private let buffer = LockedBox.make(Buffer())

    init(queue: DispatchQueue, deliver: @escaping @Sendable (JobState) -> Void) {
        self.queue = queue
        self.deliver = deliver
    }

    /// Queues `state` for delivery; called under the run's lock, so states queue in the run's order.
    /// Returns `true` when the caller must call `scheduleDrain()` once it has released that lock.
    func append(_ state: JobState) -> Bool {
        buffer.withLock { buffer in
            buffer.states.append(state)
            guard !buffer.isDraining else { return false }
            buffer.isDraining = true
            return true
        }
    }

    /// Starts delivering the queued states on the observer's queue.
    func scheduleDrain() {
        queue.async { self.drain() }
    }

    private func drain() {
        while true {
            let states = buffer.withLock { buffer -> [JobState] in
                let states = buffer.states
                buffer.states = []
                if states.isEmpty { buffer.isDraining = false }
                return states
            }
            if states.isEmpty { return }
            for state in states { deliver(state) }
        }
    }
}
