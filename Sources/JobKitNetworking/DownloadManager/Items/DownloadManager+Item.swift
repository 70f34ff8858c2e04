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
        public let file: URL
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
            self.init(
                id: id, url: url, name: name, file: directory.appendingPathComponent(name, isDirectory: false),
                checksum: checksum, state: state, progress: progress)
        }

        init(id: ItemID, url: URL, name: String, file: URL, checksum: Checksum?, state: State, progress: ByteProgress) {
            self.id = id
            self.url = url
            self.name = name
            self.file = file
            self.checksum = checksum
            self.state = state
            self.progress = progress
        }
    }
}
