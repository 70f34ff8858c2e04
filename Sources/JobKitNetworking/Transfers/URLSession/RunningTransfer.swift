import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One task's start and cancellation, in either order.
///
/// The start runs on the client's task queue: FoundationNetworking's `resume()` waits for the
/// session's transfer thread, which may be waiting for the delegate queue (see `DelegateQueue`), and
/// a job body waiting there would hold a thread of the shared global pool. A task whose run is
/// cancelled before it started is never started (nor cancelled: FoundationNetworking can trap on a
/// cancelled task that never ran).
package final class RunningTransfer: Sendable {
    private enum State {
        case notStarted
        case starting
        case running(UncheckedTask)
        /// The session reported the end of the task: cancelling it now could only race that end.
        case finished
        case cancelled
    }

    private let state = LockedBox<State>.make(.notStarted)
    private let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    /// Resumes `task` on the task queue unless the run is cancelled first; `abandon` runs instead
    /// when it never starts.
    func resume(_ task: URLSessionTask, abandon: @escaping @Sendable () -> Void) {
        let box = UncheckedTask(task)
        let starts = state.withLock { state -> Bool in
            guard case .notStarted = state else { return false }
            state = .starting
            return true
        }
        guard starts else { return abandon() }
        queue.async { [self] in
            let stillWanted = state.withLock { state -> Bool in
                if case .cancelled = state { return false }
                return true
            }
            guard stillWanted else { return abandon() }
            box.task.resume()
            let cancelledMeanwhile = state.withLock { state -> Bool in
                if case .cancelled = state { return true }
                if case .starting = state { state = .running(box) }
                return false
            }
            if cancelledMeanwhile { box.task.cancel() }
        }
    }

    /// Cancels the running task; one not started yet never starts; nothing once the task has ended.
    ///
    /// FoundationNetworking (swift-corelibs-foundation, Swift 6.3) traps when `cancel()` races the
    /// end of a task ("Trying to access a behaviour for a task that in not in the registry"): it
    /// checks the task's state, then reports the cancellation later on its queue, after the task may
    /// have left its registry. Not cancelling a task whose end was already reported narrows that
    /// window to the moment between the last byte and the report; it cannot close it.
    func cancel() {
        let running = state.withLock { state -> UncheckedTask? in
            switch state {
            case .finished, .cancelled:
                return nil
            case .running(let task):
                state = .cancelled
                return task
            case .notStarted, .starting:
                state = .cancelled
                return nil
            }
        }
        // At once, not on `queue`: a late cancel is likelier to meet the end of the task. It may
        // wait a moment for the transfer thread (see `DelegateQueue`); nothing calls it on the
        // delegate queue.
        running?.task.cancel()
    }

    /// Records that the session reported the end of the task.
    func finish() {
        state.withLock { state in
            if case .running = state { state = .finished }
        }
    }
}
