/// What is under a name.
package enum FileFacts: Equatable, Sendable {
    case missing
    case directory
    /// A file (or anything else that is not a directory: a link, a socket) of this size.
    case file(size: Int64)
}
