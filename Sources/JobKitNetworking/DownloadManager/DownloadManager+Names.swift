import Foundation

extension DownloadManager {
    /// The longest file name, in bytes (most file systems' limit).
    public static let maximumNameLength = 255

    /// Checks that `name` can be an item's file name: one plain file name of the directory, not one
    /// the manager keeps for itself. The one name rule of the manager and `jobkit download`.
    ///
    /// Refused: an empty name, `.` and `..`, a `/`, a control character (C0, DEL, C1; NUL too), more than
    /// `maximumNameLength` bytes of UTF-8, a name starting with `.jobkit` (the journal, the sidecars
    /// of long names) and one ending in `.part`, `.part.meta` or `.part.meta.tmp` (partial downloads).
    ///
    /// - Throws: `DownloadManagerError.invalidName`, whose reason says which rule.
    public static func checkName(_ name: String) throws(DownloadManagerError) {
        func refuse(_ reason: String) -> DownloadManagerError { .invalidName(name, reason: reason) }
        guard !name.isEmpty else { throw refuse("it is empty: a file name cannot be empty") }
        guard name != ".", name != ".." else { throw refuse("it names a directory: a file name cannot be '.' or '..'") }
        guard !name.contains("/") else {
            throw refuse("it has a '/': a name is one file in the directory (a file name, not a path: no '/')")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw refuse("it has a control character: a file name cannot contain control characters")
        }
        guard name.utf8.count <= maximumNameLength else {
            throw refuse(
                "it is longer than \(maximumNameLength) bytes: a file name has at most \(maximumNameLength) bytes")
        }
        guard !name.hasPrefix(".jobkit") else { throw refuse("names starting with '.jobkit' are kept for the manager") }
        for suffix in [".part", ".part.meta", ".part.meta.tmp"] where name.hasSuffix(suffix) {
            throw refuse("names ending in '\(suffix)' are kept for partial downloads")
        }
    }

    /// Whether `remove(_:deletingFile:)` may unlink item `id`'s file: not when it is completed (or
    /// downloaded again, its old file still under the name) and its file no longer has the size it
    /// was downloaded with — changed since, it is the user's now (as `JournalRecovery` judges it on a
    /// restore) and is never removed. Read outside the lock.
    func mayDeleteFile(of id: ItemID) -> Bool {
        let completed = state.withLock { machine -> (name: String, size: Int64)? in
            guard let entry = machine.items[id] else { return nil }
            // Downloaded again: its file is the completed one until the new file takes the name.
            if let previous = entry.previous, !previous.announced { return (entry.name, previous.size) }
            let item = machine.item(id, now: 0)
            guard case .completed = item.state, let size = item.progress.expected else { return nil }
            return (item.name, size)
        }
        guard let completed, case .file(let found) = folder.facts(completed.name) else { return true }
        return found == completed.size
    }
}
