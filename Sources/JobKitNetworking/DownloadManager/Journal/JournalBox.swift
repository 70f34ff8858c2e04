/// The manager's open journal, behind its lock.
// Safety: only reached through the manager's `LockedBox`.
final class JournalBox: @unchecked Sendable {
    var file: JournalFile?

    init(file: JournalFile) { self.file = file }
}
