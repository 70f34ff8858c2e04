/// What a finished download survives: how much is flushed to disk (`fsync`) before a file counts
/// as done. `Job<URL>.download` and `DownloadManager` take it; both default to `.process`.
///
/// Either way, a `.part` is never resumed over bytes a restart of the machine may have lost: its
/// metadata records the boot it was written in (Linux `/proc/sys/kernel/random/boot_id`, Apple
/// platforms `kern.bootsessionuuid`). After a power loss or an operating-system crash the kernel
/// may have written back a file's later pages and not its earlier ones, which then read as zeros
/// under an unchanged size — so once the boot differs (or cannot be read), a `.part` resumes only
/// from the length last flushed to disk, and starts over when none was.
public enum Durability: Sendable, Hashable, CustomStringConvertible {
    /// Survives the process being killed (`kill -9`) or crashing at any moment: a file that took
    /// its name is complete, a `.part` resumes where it ends, and a manager's journal keeps every
    /// record it wrote — the kernel keeps what was written, and a rename is atomic. Nothing is
    /// flushed to disk (as curl and aria2c do), so it costs nothing. It does not survive a power
    /// loss or an operating-system crash: files finished in the seconds before may then be missing,
    /// empty or short under their name, and a manager's journal may lack its last records (a
    /// manager opened afterwards fetches a missing file again, and fails an item whose file has the
    /// wrong size with `fileInTheWay`, leaving the file). A `.part` is never flushed, so after a
    /// restart of the machine every `.part` starts over: its length no longer proves its bytes.
    case process
    /// Also survives a power loss or an operating-system crash: each `.part` is flushed before it
    /// is renamed to its name and its folder after, so a file under its name is complete on disk;
    /// a manager's journal is flushed after each add, before each file takes its name (its
    /// `finishing` record) and when it is rewritten. Costs a few milliseconds of disk time per file.
    /// A folder flush that fails (a failing disk) fails what it was for: a download's finalize (the
    /// `.part` takes its name back, and a resume or retry finishes it) or a journal's rewrite (a
    /// manager does not open, a change waits); a file system that cannot flush a folder at all
    /// (`EINVAL`, `ENOTSUP`) counts as flushed.
    ///
    /// A `.part` is also flushed after every 16 MiB written (a segmented download's, after every
    /// 16 MiB of all its connections), and the flushed length (or segment map) kept in its
    /// metadata: after a restart of the machine it resumes from there — at most 16 MiB is fetched
    /// again — and a `.part` never flushed (a file under 16 MiB) starts over. A killed process
    /// still resumes the whole `.part`. Measured on an ext4 disk: 256 MiB written with a flush per
    /// 16 MiB took 0.133 s against 0.111 s with the one flush at the end.
    case system

    /// `process` or `system`.
    public var description: String {
        switch self {
        case .process: "process"
        case .system: "system"
        }
    }
}
