import Foundation

/// What a `MemoryFileSystem` does on the next operation that matches: fail it with an `errno`, or
/// first put a file or folder under a name (something of somebody else's appearing at that moment).
/// One-shot: it acts once, on the `skipping + 1`-th match, and is gone.
struct MemoryFault: Sendable {
    /// The operations a fault can match.
    enum Operation: Sendable, Equatable {
        /// Opening (or creating) a file.
        case open
        /// A write of a file's bytes (sequential or positional).
        case write
        case read
        case truncate
        /// An `fsync` of a file.
        case sync
        /// A rename, matched by its source's name.
        case rename
        case unlink
        case lock
        /// An `fsync` of a folder (the name it matches is the folder's path).
        case folderSync
    }

    /// What is planted under a name.
    enum Planted: Sendable, Equatable {
        case file(Data)
        case directory
    }

    enum Action: Sendable, Equatable {
        /// The operation fails with this `errno` (ENOSPC, EIO, EACCES) and does nothing.
        case fail(Int32)
        /// Before the operation runs, `planted` appears under `name` in the operation's folder
        /// (durable at once: it was somebody else's, long there); the operation then runs.
        case plant(Planted, name: String)
    }

    var operation: Operation
    /// The name the operation acts on: an open file's name now (or when it was opened), a rename's
    /// source, a folder sync's path.
    var name: String
    var action: Action
    /// Matches to let pass before it acts.
    var skipping = 0
}
