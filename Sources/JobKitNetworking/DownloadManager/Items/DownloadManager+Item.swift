import Foundation

extension DownloadManager {
    /// One item: what was asked, where it is, and its bytes.
    public struct Item: Sendable, Equatable, Identifiable {
        public let id: ItemID
        /// Where it is downloaded from.
        public let url: URL
        /// Its file name in the directory.
        public let name: String
        /// The file: the directory and the name.
        public var file: URL { directory.appendingPathComponent(name, isDirectory: false) }
        /// The manager's directory: one value all its items share (a `file` URL of each would cost about
        /// 300 bytes an item for as long as the manager holds it).
        private let directory: URL
        /// The digest it is verified against, if any.
        public let checksum: Checksum?
        /// Its state when this value was made.
        public var state: State
        /// Its bytes when this value was made (speed and time remaining only while it runs).
        public var progress: ByteProgress

        /// An item as a manager reports it, made by hand (for a display's tests); `file` is
        /// `directory/name`.
        package init(
            id: ItemID, url: URL, name: String, directory: URL, checksum: Checksum? = nil, state: State,
            progress: ByteProgress
        ) {
            self.id = id
            self.url = url
            self.name = name
            self.directory = directory
            self.checksum = checksum
            self.state = state
            self.progress = progress
        }
    }
}
