/// Where one run of a job is in its life.
///
/// A run moves `pending → running(fraction:) → finished | failed | cancelled`, and may go from
/// `pending` straight to `cancelled`. The three outcomes are final: once a run reaches one, its state
/// never changes again.
public enum JobState: Sendable, Equatable, CustomStringConvertible {
    /// Created, its body not started yet (queued, or waiting for a free slot in a bounded group).
    case pending
    /// The body is running; `fraction` is the last progress it reported, in `0...1`.
    case running(fraction: Double)
    /// Completed with a value.
    case finished
    /// Completed with an error other than cancellation.
    case failed
    /// Cancelled before it completed, or its body never started.
    case cancelled

    /// Whether the run has completed; a final state never changes.
    public var isFinal: Bool {
        switch self {
        case .pending, .running: false
        case .finished, .failed, .cancelled: true
        }
    }

    public var description: String {
        switch self {
        case .pending: "pending"
        case .running(let fraction): "running \(Int((fraction * 100).rounded(.down)))%"
        case .finished: "finished"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}
