import Foundation

/// An open file of a `DownloadFolder`: a `.part`, its metadata, a manager's journal. Failures are
/// `errno` values (`EINTR` is retried inside, never returned).
///
/// Its owner serializes the calls that move its position (`write(_:)`, `seek(to:)`, `truncate(to:)`);
/// positional reads and writes may run side by side.
package protocol DownloadFile: AnyObject, Sendable {
    /// Its size in bytes; nil when it cannot be told.
    func size() -> Int64?

    /// Which file it is; nil when it cannot be told.
    func identity() -> FileIdentity?

    /// Writes all of `bytes` at the position (at the end when opened with `O_APPEND`), moving it.
    ///
    /// - Returns: nil when all were written, else the `errno` (`EIO` for a write that wrote nothing).
    func write(_ bytes: UnsafeRawBufferPointer) -> Int32?

    /// Writes all of `bytes` at `offset` (`pwrite`), leaving the position as it is.
    ///
    /// - Returns: nil when all were written, else the `errno` (`EIO` for a write that wrote nothing).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32?

    /// Reads up to `buffer.count` bytes at `offset` (`pread`), leaving the position as it is.
    ///
    /// - Returns: the count read (0 at the end), or the `errno`.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, POSIXError>

    /// Cuts (or extends) it to `length` bytes; the position stays. Nil when done, else the `errno`.
    func truncate(to length: Int64) -> Int32?

    /// Moves the position to `offset`. Nil when done, else the `errno`.
    func seek(to offset: Int64) -> Int32?

    /// Flushes its bytes to disk (`fsync`). Nil when done, else the `errno`.
    func sync() -> Int32?

    /// Takes its exclusive lock (`flock`) without blocking, trying again while it is busy until
    /// `deadline` (`DispatchTime` nanoseconds) has passed.
    ///
    /// - Returns: nil once locked; `EWOULDBLOCK` when still busy at the deadline; any other `errno` at once.
    func lockExclusively(until deadline: UInt64) -> Int32?

    /// Narrows its permissions to the owner's read and write (0600) when they are wider; best effort.
    func restrictToOwner()

    /// A second open file of the same file (`dup`), sharing its lock, for reading; or the `errno`.
    func duplicate() -> Result<any DownloadFile, POSIXError>

    /// Closes it (releasing its lock, unless a duplicate holds it). Calls after this fail.
    func close()
}
