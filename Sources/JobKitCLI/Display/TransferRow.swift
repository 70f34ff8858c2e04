/// One transfer (an upload or a download) as the display shows it: the view model of a row.
struct TransferRow: Equatable, Sendable {
    /// What the transfer is doing.
    enum Status: Equatable, Sendable {
        case queued
        case running
        /// Waiting to try again after a transient failure (`attempt` is the one about to start).
        case retrying(attempt: Int, reason: String)
        case paused
        case completed
        case failed(reason: String)
        case cancelled

        /// Completed, failed or cancelled: nothing will change any more.
        var isFinal: Bool {
            switch self {
            case .completed, .failed, .cancelled: true
            case .queued, .running, .retrying, .paused: false
            }
        }

        /// Running, retrying or paused: shown on a live line.
        var isActive: Bool {
            switch self {
            case .running, .retrying, .paused: true
            case .queued, .completed, .failed, .cancelled: false
            }
        }

        /// The word of the JSON and plain-line events: `queued`, `running`, `retrying`, …
        var word: String {
            switch self {
            case .queued: "queued"
            case .running: "running"
            case .retrying: "retrying"
            case .paused: "paused"
            case .completed: "completed"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }
    }

    /// Unique within one display.
    var id: Int
    var name: String
    var bytesDone: Int64 = 0
    /// Nil while the size is unknown (no `Content-Length` yet, or none at all).
    var totalBytes: Int64?
    /// A moving average; 0 when nothing moves.
    var bytesPerSecond: Double = 0
    /// Nil when unknown (no total, or no speed).
    var secondsRemaining: Double?
    var status: Status = .queued
}
