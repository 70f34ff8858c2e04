import Foundation

extension DownloadJournal {
    /// One line after the header.
    struct Record: Codable, Equatable {
        enum Op: String, Codable {
            case add, state, finishing, done, remove, url
        }

        var op: Op
        var id: UInt64
        var url: String?
        var name: String?
        var checksum: String?
        var state: String?
        var kind: String?
        var reason: String?
        var status: Int?
        var size: Int64?

        static func add(_ id: UInt64, url: URL, name: String, checksum: Checksum?) -> Record {
            Record(op: .add, id: id, url: url.absoluteString, name: name, checksum: checksum?.description)
        }

        /// The item's new URL (`replaceURL`, or a refreshed one): a restore fetches from it.
        static func url(_ id: UInt64, _ url: URL) -> Record {
            Record(op: .url, id: id, url: url.absoluteString)
        }

        static func state(_ id: UInt64, _ status: Entry.Status) -> Record {
            var record = Record(op: .state, id: id)
            switch status {
            case .pending, .finishing, .completed: record.state = "pending"
            case .suspended: record.state = "suspended"
            case .cancelled: record.state = "cancelled"
            case .failed(let failure):
                record.state = "failed"
                record.kind = failure.kind.rawValue
                record.reason = Self.shortened(failure.message)
                record.status = failure.status
            }
            return record
        }

        /// The longest reason a record keeps, in bytes of UTF-8 (a reason read back keeps its first
        /// 2,000 characters): a line stays far below `Reader.maximumLineLength` whatever a server
        /// answered, even escaped.
        static let maximumReasonLength = 8 << 10

        /// `reason`, cut to `maximumReasonLength` bytes at a character's end.
        static func shortened(_ reason: String) -> String {
            guard reason.utf8.count > maximumReasonLength else { return reason }
            var length = 0
            return String(
                reason.prefix { character in
                    length += character.utf8.count
                    return length <= maximumReasonLength
                })
        }
    }
}
