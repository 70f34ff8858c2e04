/// The manager's open journal.
// Safety: `file` is read and written only by the holder of the journal's pen (`JournalPen`, in the
// state machine): one thread at a time, each turn handed on under the manager's lock.
final class JournalBox: @unchecked Sendable {
    /// Nil once closed.
    var file: JournalFile?

    init(file: JournalFile) { self.file = file }
}
