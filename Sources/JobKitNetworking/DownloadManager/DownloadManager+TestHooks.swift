extension DownloadManager {
    /// Points where a test acts in the middle of the manager's work, so that a race it checks
    /// happens every time. They do nothing unless a test sets them.
    struct TestHooks: Sendable {
        /// A transition decided to stop runs, with no lock held, just before they are cancelled.
        var beforeCancel: @Sendable () -> Void = {}
        /// The paths a transition decided to unlink, with no lock held, just before they are.
        var beforeUnlink: @Sendable (_ paths: [String]) -> Void = { _ in }
        /// An item's run recorded `finishing` (its `.part` is complete and verified), just before
        /// the `.part` is renamed to the item's name.
        var afterFinishing: @Sendable (_ id: ItemID) -> Void = { _ in }
        /// Asked before each write, sync or rewrite of the journal: an `errno` makes it fail as if
        /// the disk had (ENOSPC, EIO); nil lets it happen.
        var journalFailure: @Sendable () -> Int32? = { nil }
    }
}
