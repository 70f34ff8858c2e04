extension DownloadManager {
    /// Where an item is.
    ///
    /// `pending → running → (verifying →) completed | failed`; `suspend` makes a pending or running
    /// item `suspended`, `cancel` makes any unfinished one `cancelled`, and `resume` queues a
    /// suspended, failed or cancelled one again (`pending`). Only `completed` is never left, but by
    /// `remove`.
    public enum State: Sendable, Equatable, CustomStringConvertible {
        /// Waiting for a free slot (of the width, or of its host).
        case pending
        /// Downloading (retries included).
        case running
        /// Downloaded; its checksum is being computed before it takes its name.
        case verifying
        /// Stopped by `suspend`, its `.part` kept for `resume`.
        case suspended
        /// The file is in the directory under its name (verified, when it has a checksum).
        case completed
        /// Gave up; the failure says why. The `.part` is kept for a later `resume`, except after a
        /// checksum mismatch (then nothing of it is left).
        case failed(ItemError)
        /// Stopped by `cancel`; its `.part` was removed.
        case cancelled

        /// Whether the item is waiting, running or verifying: the manager is not idle while one is.
        public var isActive: Bool {
            switch self {
            case .pending, .running, .verifying: true
            case .suspended, .completed, .failed, .cancelled: false
            }
        }

        /// One lower-case word: `pending`, `running`, `verifying`, `suspended`, `completed`,
        /// `failed`, `cancelled` (for logs and JSON).
        public var name: String {
            switch self {
            case .pending: "pending"
            case .running: "running"
            case .verifying: "verifying"
            case .suspended: "suspended"
            case .completed: "completed"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }

        /// The name, and the reason of a failure: `failed: HTTP 404 Not Found for …`.
        public var description: String {
            if case .failed(let failure) = self { return "failed: \(failure.message)" }
            return name
        }
    }
}
