/// What a finished download survives: how much is flushed to disk (`fsync`) before a file counts
/// as done. `Job<URL>.download` and `DownloadManager` take it; both default to `.process`.
public enum Durability: Sendable, Hashable, CustomStringConvertible {
    /// Survives the process being killed (`kill -9`) or crashing at any moment: a file that took
    /// its name is complete, a `.part` resumes, and a manager's journal keeps every record it
    /// wrote — the kernel keeps what was written, and a rename is atomic. Nothing is flushed to
    /// disk (as curl and aria2c do), so it costs nothing. It does not survive a power loss or an
    /// operating-system crash: files finished in the seconds before may then be missing, empty or
    /// short under their name, and a manager's journal may lack its last records (a manager opened
    /// afterwards fetches a missing file again, and fails an item whose file has the wrong size
    /// with `fileInTheWay`, leaving the file).
    case process
    /// Also survives a power loss or an operating-system crash: each `.part` is flushed before it
    /// is renamed to its name and its folder after, so a file under its name is complete on disk;
    /// a manager's journal is flushed after each add, before each file takes its name (its
    /// `finishing` record) and when it is rewritten. Costs a few milliseconds of disk time per file.
    case system

    /// `process` or `system`.
    public var description: String {
        switch self {
        case .process: "process"
        case .system: "system"
        }
    }
}
