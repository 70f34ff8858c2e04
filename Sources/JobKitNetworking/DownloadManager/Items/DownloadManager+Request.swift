import Foundation

extension DownloadManager {
    /// One download to add: a URL, and optionally its file name, checksum and headers.
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
        /// it is added again with this set. A completed item under the name, of another URL and the
        /// same checksum, is downloaded again from this request's URL (`downloadAgain`: its file and
        /// its record stay until the new file replaces them) instead of taking the name as
        /// `nameTaken`; its id is the one `add` returns.
        public var replacesExistingFile: Bool
        /// Headers sent with every request of the item: the first, each retry and each resume (also
        /// from a URL that `replaceURL` or the `urlRefresher` gave). Each is validated when it is made
        /// (`Header`: no reserved name such as `Range` or `Host`, no control character); at most
        /// `Header.maximumCount`.
        ///
        /// Not kept in the journal (they often carry credentials): an item restored by a new manager
        /// is requested without them until it is added again with them — a request with the same
        /// URL, name and checksum as an item sets that item's headers to its own.
        public var headers: [Header]
        /// The most bytes a second this download reads (aria2's `--max-download-limit`), within the
        /// overall limit (`Configuration.maxBytesPerSecond`); nil (the default), zero or negative: no
        /// limit of its own. `DownloadManager.setMaxBytesPerSecond(_:for:)` changes it while it runs.
        /// Adding the request of an existing item again gives that item this limit. Not kept in the
        /// journal: an item restored by a new manager has no limit of its own until it is set again.
        public var maxBytesPerSecond: Int64?
        /// The most connections the file is fetched over at once (aria2's `-x`/`split=`): 1 (the
        /// default) fetches it from start to end on one. Values below 1 count as 1, above 16 as 16.
        ///
        /// With more than one, and when the server answers a first `Range: bytes=0-` with a `206`
        /// that gives the length, a strong ETag (or else a Last-Modified date) and no content coding,
        /// the file is split into that many ranges (none shorter than 1 MiB) fetched in parallel into
        /// the one `.part`, each connection writing its own range. The split is kept in the
        /// `.part.meta`, so that a process killed at any moment resumes every range where it stopped.
        /// A range answered without that validator — a `200`, another ETag, another `Content-Range` —
        /// starts the file over on one connection; a server without ranges is read on one. The
        /// checksum is computed over the whole file once it is complete.
        ///
        /// Each connection is one of `Configuration.maxConcurrent` and `maxPerHost`'s slots: the
        /// item takes as many as are free when it starts, up to `connections`, at least one (it
        /// never waits for more), and holds only those it uses. As soon as its run learns that it
        /// opens fewer — the file is not split (too short to split, no ranges, no length or no
        /// validator, content-coded), falls back to one connection, is split into fewer ranges than
        /// slots, or a range finishes while others go on — it gives the rest back at once, and
        /// pending items start in them; it frees what it kept when its run ends. A retry of the run
        /// splits into at most the slots it kept. A `.part` split by an earlier run and resumed
        /// with `connections` 1 starts over. Not kept in the journal.
        public var connections: Int

        /// A request for `url`, under `name` (nil: the URL's last path component).
        public init(
            url: URL, name: String? = nil, checksum: Checksum? = nil, replacesExistingFile: Bool = false,
            headers: [Header] = [], maxBytesPerSecond: Int64? = nil, connections: Int = 1
        ) {
            self.connections = connections
            self.maxBytesPerSecond = maxBytesPerSecond
            self.url = url
            self.name = name
            self.checksum = checksum
            self.replacesExistingFile = replacesExistingFile
            self.headers = headers
        }

        /// `connections` within 1 to `SegmentMap.maximumSegments`.
        var effectiveConnections: Int { min(max(connections, 1), SegmentMap.maximumSegments) }
    }
}
