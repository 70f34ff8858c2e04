import Foundation

extension DownloadJournal {
    /// What the journal says of one item.
    struct Entry: Equatable {
        enum Status: Equatable {
            case pending
            case suspended
            case cancelled
            case failed(DownloadManager.ItemError)
            /// The `.part` of this size was about to be renamed to the name when the journal ended.
            case finishing(size: Int64)
            case completed(size: Int64)
        }

        var id: UInt64
        var url: URL
        var name: String
        var checksum: Checksum?
        var status: Status
        /// A `finishing` or `done` record was written: the file under the name is the manager's.
        var ownsFile = false
        /// While `finishing` with a new URL (`downloadAgain`): the completed file it replaces, under
        /// the name until the rename (its URL and size), which a restore keeps when the rename did not
        /// happen.
        var replaced: Replaced?

        struct Replaced: Equatable {
            var url: URL
            var size: Int64
        }
    }
}
