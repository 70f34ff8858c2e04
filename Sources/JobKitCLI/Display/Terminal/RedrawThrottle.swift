/// When the live display may redraw: at most once per `interval`, with every change eventually shown.
///
/// A change arriving within `interval` of the last frame asks for one frame at the end of the interval;
/// further changes until then ride on that frame. Pure: times are given, never read.
struct RedrawThrottle: Sendable, Equatable {
    enum Decision: Equatable {
        /// Draw at once.
        case drawNow
        /// Schedule one frame at this time (seconds, on the caller's clock).
        case drawAt(Double)
        /// A frame is scheduled already: nothing to do.
        case wait
    }

    /// The shortest time between two frames, in seconds: 0.1 is 10 frames a second.
    var interval = 0.1
    private var lastFrame: Double?
    private var scheduled: Double?

    /// What to do about a change at `now`.
    mutating func change(at now: Double) -> Decision {
        if scheduled != nil { return .wait }
        guard let lastFrame, now - lastFrame < interval, now >= lastFrame else { return .drawNow }
        scheduled = lastFrame + interval
        return .drawAt(lastFrame + interval)
    }

    /// Records that a frame was drawn at `now` (a scheduled one, or one drawn at once).
    mutating func drew(at now: Double) {
        lastFrame = now
        scheduled = nil
    }
}
