import Foundation

/// The errors JobKit itself produces. A job's own errors pass through unchanged.
public enum JobError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    /// The run was cancelled: by `JobHandle.cancel()`, by its enclosing group, or by the Swift task
    /// awaiting it.
    case cancelled
    /// The run did not complete within the time it was given.
    case timedOut
    /// `Job.race` or `Job.firstSuccess` was given no job: there is nothing to wait for.
    case noJobs
    /// An argument makes no sense (a `maxConcurrent` below 1, say); the message names it.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .cancelled: "the job was cancelled"
        case .timedOut: "the job timed out"
        case .noJobs: "no jobs were given, so none can complete"
        case .invalidArgument(let message): "invalid argument: \(message)"
        }
    }

    public var errorDescription: String? { description }
}
