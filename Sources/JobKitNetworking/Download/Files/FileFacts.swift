/// What is under a name.
enum FileFacts: Equatable {
    case missing
    case directory
    /// A file (or anything else that is not a directory: a link, a socket) of this size.
    case file(size: Int64)
}
