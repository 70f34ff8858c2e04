extension DownloadManager {
    /// Names one item of a manager, across restarts: ids are kept in the journal and never reused
    /// in a directory.
    public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible {
        /// The number, from 1 in the order items were added to the directory.
        public let rawValue: UInt64

        /// The id with this number.
        public init(rawValue: UInt64) { self.rawValue = rawValue }

        public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String { "#\(rawValue)" }
    }
}
