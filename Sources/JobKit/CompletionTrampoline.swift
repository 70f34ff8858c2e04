#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Runs completions iteratively, so that a completion that completes another run never deepens the
/// stack — the way SwiftNIO runs a future's callback list.
///
/// The first completion on a thread runs at once and then drains, in order, every completion that
/// was handed over while it ran; a nested one is queued on the thread and runs after the one that
/// caused it returns. So a recursive chain a million levels deep unwinds in a loop, not in a million
/// frames, and every completion still runs before the outermost call returns.
enum CompletionTrampoline {
    /// The completions waiting on one thread.
    private final class Frame {
        var isDraining = false
        var pending: [() -> Void] = []
    }

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

    private static var currentFrame: Frame {
        if let frame = pthread_getspecific(key) {
            return Unmanaged<Frame>.fromOpaque(frame).takeUnretainedValue()
        }
        let frame = Frame()
        pthread_setspecific(key, Unmanaged.passRetained(frame).toOpaque())
        return frame
    }

    /// Calls `completion(value)` now, or — when called from inside another completion on this
    /// thread — as soon as that one returns.
    @inline(__always)
    static func deliver<T>(_ value: T, to completion: @escaping (T) -> Void) {
        let frame = currentFrame
        if frame.isDraining {
            frame.pending.append { completion(value) }
            return
        }
        frame.isDraining = true
        completion(value)
        while !frame.pending.isEmpty {
            let batch = frame.pending
            frame.pending = []
            for next in batch { next() }
        }
        frame.isDraining = false
    }

    /// Whether a completion is running on this thread (for tests).
    static var isDraining: Bool { currentFrame.isDraining }
}
