import Foundation

extension DownloadManager {
    /// One download to add: a URL, and optionally its file name and checksum.
    public struct Request: Sendable, Hashable {
        /// An `http` or `https` URL.
        public var url: URL
        /// The file name in the manager's directory; nil: the URL's last path component.
        public var name: String?
        /// The digest the file must have; nil: not verified.
        public var checksum: Checksum?
        /// The finished file may replace a file already under its name (aria2's `--allow-overwrite`).
        /// False (the default): a file or folder under the name, when the item starts or when it
        /// appears while it runs, fails the item as `fileInTheWay` and is left exactly as it is.
        /// Not kept in the journal: an item restored by a new manager never replaces a file, unless
        /// it is added again with this set.
        public var replacesExistingFile: Bool

        /// A request for `url`, under `name` (nil: the URL's last path component).
        public init(url: URL, name: String? = nil, checksum: Checksum? = nil, replacesExistingFile: Bool = false) {
            self.url = url
            self.name = name
            self.checksum = checksum
            self.replacesExistingFile = replacesExistingFile
        }
    }
}
