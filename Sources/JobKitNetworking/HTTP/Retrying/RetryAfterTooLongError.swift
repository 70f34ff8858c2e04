import Foundation

/// A server asked to wait longer than the retry policy's maximum before trying again: the job fails
/// instead of waiting. `requested` is the delay it asked for.
public struct RetryAfterTooLongError: Error, LocalizedError, CustomStringConvertible {
    /// The delay the server asked for.
    public let requested: Duration
    /// The longest wait the policy accepts.
    public let maximum: Duration
    /// The response that asked for it.
    public let response: HTTPStatusError

    public var errorDescription: String? {
        "\(response.errorDescription!) asked to retry after \(requested.components.seconds) s, "
            + "longer than the \(maximum.components.seconds) s the retry policy accepts"
    }

    public var description: String { errorDescription! }
}

/// The name `RetryAfterTooLongError` had before 0.2: kept so that code written against it still builds.
public typealias RetryAfterTooLong = RetryAfterTooLongError
