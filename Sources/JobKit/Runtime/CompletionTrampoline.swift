#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Runs completions, progress notices and cancellation cascades iteratively, so that a run that
/// completes, reports to or cancels another run never deepens the stack — the way SwiftNIO runs a
/// future's callback list.
///
/// - A completion (or progress notice) delivered on a thread that is already running one is queued
///   on the thread and runs after the one that caused it returns, in order.
/// - A cancellation runs its handlers at once, and then — before `cancel()` returns — every
///   cancellation it cascades to (children, members, losers), one after another in a loop; the
///   cancelled runs' notices and completions follow once every handler of the cascade has run. So
///   the `onCancel` handlers of a whole cancelled tree have run when `cancel()` returns, and before
///   any of its runs is delivered as cancelled, even when it is called from inside a completion.
///   Completions it causes are queued.
///
/// Every queued item runs before the outermost call on the thread returns.
enum CompletionTrampoline {
    /// The work waiting on one thread.
    private typealias Frame = CompletionTrampolineFrame

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let error = pthread_key_create(&key) { frame in
            #if canImport(Darwin)
                Unmanaged<Frame>.fromOpaque(frame).release()
            #else
                if let frame { Unmanaged<Frame>.fromOpaque(frame).release() }
            #endif
        }
        precondition(error == 0, "JobKit: pthread_key_create failed: \(error)")
        return key
    }()

    /// This thread's frame. It lives as long as the thread (its slot holds it).
    @inline(__always)
    private static var currentFrame: Unmanaged<Frame> {
        if let frame = pthread_getspecific(key) {
            return Unmanaged<Frame>.fromOpaque(frame)
        }
        let frame = Unmanaged.passRetained(Frame())
        pthread_setspecific(key, frame.toOpaque())
        return frame
    }

    /// Calls `body` with this thread's frame, borrowed as it is: no retain and release on the hot
    /// path.
    @inline(__always)
    private static func withCurrentFrame<Result>(_ body: (Frame) -> Result) -> Result {
        withBorrowed(currentFrame, body)
    }

    /// Calls `completion(value)` now, or — when called from inside another item on this thread —
    /// as soon as that one returns.
    @inline(__always)
    static func deliver<T>(_ value: T, to completion: @escaping (T) -> Void) {
        withCurrentFrame { frame in
            if frame.isDraining {
                frame.completions.append { completion(value) }
                return
            }
            frame.isDraining = true
            completion(value)
            drain(frame)
            frame.isDraining = false
        }
    }

    /// Like `deliver(_:to:)`, for a run's completion: nothing is allocated unless it must wait.
    @inline(__always)
    static func deliver<Value: Sendable>(_ result: Result<Value, any Error>, to completion: ErasedRunCompletion) {
        withCurrentFrame { frame in
            if frame.isDraining {
                frame.completions.append { completion(result) }
                return
            }
            frame.isDraining = true
            completion(result)
            if !frame.completions.isEmpty { drain(frame) }
            frame.isDraining = false
        }
    }

    /// Runs `cancellation` (one run's cancel handlers, notice and completion) now, then every
    /// cancellation it cascades to; a cascaded one is queued and run by that loop.
    static func cancel(_ cancellation: @escaping () -> Void) {
        withCurrentFrame { frame in
            if frame.isCancelling {
                frame.cancellations.append(cancellation)
                return
            }
            let wasDraining = frame.isDraining
            frame.isDraining = true
            frame.isCancelling = true
            cancellation()
            runCancellations(frame)
            frame.isCancelling = false
            if !wasDraining {
                drain(frame)
                frame.isDraining = false
            }
        }
    }

    /// Queues `delivery` (a cancelled run's notice and completion) behind every cancellation of the
    /// cascade under way, at any depth: when a cancelled group's completion is delivered, the cancel
    /// handlers of its members, and of theirs, have run. Runs it at once outside a cascade.
    static func afterCancellations(_ delivery: @escaping () -> Void) {
        withCurrentFrame { frame in
            guard frame.isCancelling else { return delivery() }
            frame.cancelledDeliveries.append(delivery)
        }
    }

    private static func runCancellations(_ frame: Frame) {
        while true {
            if !frame.cancellations.isEmpty {
                let batch = frame.cancellations
                frame.cancellations = []
                for cancellation in batch { cancellation() }
            } else if !frame.cancelledDeliveries.isEmpty {
                let batch = frame.cancelledDeliveries
                frame.cancelledDeliveries = []
                for delivery in batch { delivery() }
            } else {
                return
            }
        }
    }

    private static func drain(_ frame: Frame) {
        while !frame.completions.isEmpty {
            let batch = frame.completions
            frame.completions = []
            for completion in batch { completion() }
        }
    }

    /// Drops `payload` — the last reference to something that may hold a long nest of jobs — in a
    /// loop: a payload released while another is being dropped on this thread waits its turn, so
    /// releasing a job nested 1,000,000 levels deep takes constant stack.
    static func release(_ payload: consuming Any) {
        // Moved, not copied: the caller's reference must not outlive the loop below.
        var payload: Any? = consume payload
        withCurrentFrame { frame in
            frame.releases.append(payload.take()!)
            guard !frame.isReleasing else { return }
            frame.isReleasing = true
            while let next = frame.releases.popLast() {
                _ = consume next
            }
            frame.isReleasing = false
        }
    }

    /// Whether a completion is running on this thread (for tests).
    static var isDraining: Bool { withCurrentFrame { $0.isDraining } }
}
