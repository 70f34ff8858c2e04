import Dispatch

extension JobHandle {
    /// Calls `handler` on `queue` with every state of the run, in order: first the state at the time of
    /// the call, then each change (each progress report is a `.running(fraction:)`), ending with the
    /// final state.
    ///
    /// Calls never overlap, even on a concurrent queue. Progress is coalesced: while a call is
    /// pending, a newer fraction replaces an undelivered one, so a run reporting 100,000 times gives a
    /// slow observer a few deliveries, the last one current; `pending` and the final state are never
    /// dropped. Registered after the run ended, the handler runs once, with the final state. JobKit
    /// retains `handler` until it has delivered the final state or the observation is cancelled.
    ///
    /// ```swift
    /// let observation = handle.onStateChange { state in row.show(state) }   // on the main queue
    /// observation.cancel()                                                  // no call starts after this
    /// ```
    ///
    /// - Returns: a token that ends the observation; the observation goes on if it is discarded.
    @discardableResult
    public func onStateChange(on queue: DispatchQueue = .main, _ handler: @escaping @Sendable (JobState) -> Void)
        -> JobObservation
    {
        let observer = StateObserver(queue: queue, deliver: handler)
        run.observe(observer)
        return JobObservation(run: run, observer: observer)
    }

    /// The run's states as an async sequence: the same states `onStateChange` delivers, in the same
    /// order; it finishes after the final state. Ending the iteration early stops the delivery.
    public var states: AsyncStream<JobState> {
        AsyncStream(bufferingPolicy: .unbounded) { continuation in
            let observer = StateObserver(queue: .global()) { state in
                continuation.yield(state)
                if state.isFinal { continuation.finish() }
            }
            continuation.onTermination = { [run] _ in run.stopObserving(observer) }
            run.observe(observer)
        }
    }

    /// Sets the delegate that hears of this run on `queue`, replacing the previous one (which is not
    /// called again). The delegate is held `weak`: once it is gone, nothing is called and nothing keeps
    /// it alive.
    ///
    /// For every state `onStateChange` would deliver (progress coalesced the same way), the delegate
    /// gets `job(_:didChangeState:)`, then `job(_:didReportProgress:)` for a running state, or
    /// `job(_:didCompleteWith:)` for a final one — where `handle.error` tells why a run failed.
    ///
    /// - Returns: a token that ends this delegate's observation.
    @discardableResult
    public func setDelegate(_ delegate: any JobDelegate, on queue: DispatchQueue = .main) -> JobObservation {
        let weakDelegate = WeakDelegate(delegate)
        let observer = StateObserver(queue: queue) { state in
            guard let delegate = weakDelegate.value else { return }
            delegate.job(self, didChangeState: state)
            switch state {
            case .running(let fraction): delegate.job(self, didReportProgress: fraction)
            case .finished, .failed, .cancelled: delegate.job(self, didCompleteWith: state)
            case .pending: break
            }
        }
        run.replaceDelegateObserver(with: observer)
        return JobObservation(run: run, observer: observer)
    }
}

/// One observation of a run, from `JobHandle.onStateChange(on:_:)` or `JobHandle.setDelegate(_:on:)`.
public struct JobObservation: Sendable {
    let run: any AnyRun
    let observer: StateObserver

    /// Ends the observation: no delivery starts after this returns (one already running on the
    /// observer's queue may finish), and the handler or delegate is released. Calling it again, or
    /// after the run ended, does nothing.
    public func cancel() {
        run.stopObserving(observer)
    }
}

/// Hears of one run, through `JobHandle.setDelegate(_:on:)`.
///
/// **Threading.** Every method is called on the queue given to `setDelegate`, one call at a time,
/// in the run's order; `job(_:didCompleteWith:)` exactly once per run unless the delegate is gone
/// first. JobKit holds the delegate `weak`: it never keeps it alive, and a delegate that is
/// deallocated mid-run is simply not called again. Every method has a default that does nothing.
public protocol JobDelegate: AnyObject, Sendable {
    /// Every state, starting with the state when the delegate was set.
    func job(_ handle: JobHandle, didChangeState state: JobState)
    /// A running state's fraction, in `0...1`, never decreasing.
    func job(_ handle: JobHandle, didReportProgress fraction: Double)
    /// The final state: `.finished`, `.failed` or `.cancelled`. `handle.error` holds the error of a
    /// failed run (`JobError.cancelled` for a cancelled one).
    func job(_ handle: JobHandle, didCompleteWith state: JobState)
}

extension JobDelegate {
    public func job(_ handle: JobHandle, didChangeState state: JobState) {}
    public func job(_ handle: JobHandle, didReportProgress fraction: Double) {}
    public func job(_ handle: JobHandle, didCompleteWith state: JobState) {}
}

/// A delegate held weakly.
// Safety: `value` is a `weak` reference to a Sendable object; weak loads and stores are atomic.
private struct WeakDelegate: @unchecked Sendable {
    weak var value: (any JobDelegate)?

    init(_ value: any JobDelegate) { self.value = value }
}
