/// The errors JobKit itself produces. A job's own errors pass through unchanged.
public enum JobError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The run was cancelled: by `JobHandle.cancel()`, by its enclosing group, or by the Swift task
    /// awaiting it.
    case cancelled
    /// The run did not complete within the time it was given.
    case timedOut

    public var description: String {
        switch self {
        case .cancelled: "the job was cancelled"
        case .timedOut: "the job timed out"
        }
    }
}
