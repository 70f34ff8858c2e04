extension DownloadManager {
    /// One HTTP header a request sends with every request of its item — the first, every retry and
    /// every resume — as aria2's `header=` (a token, a cookie). Validated when it is made: a header
    /// that exists is one that can be sent.
    ///
    /// ```swift
    /// let token = try DownloadManager.Header("Authorization", "Bearer \(secret)")
    /// try manager.add(contentsOf: [DownloadManager.Request(url: url, headers: [token])])
    /// ```
    ///
    /// **Reserved names.** The download owns the headers that make its ranges, resumes and lengths
    /// right, and the transport those of the connection; a request cannot set them, and such a
    /// header is refused (not silently dropped): `Range`, `If-Range`, `Accept-Encoding`,
    /// `If-Match`, `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since`, `Host`,
    /// `Content-Length`, `Transfer-Encoding`, `Connection`, `Keep-Alive`, `Proxy-Connection`, `TE`,
    /// `Trailer`, `Upgrade` and `Expect` (see `reservedNames`).
    public struct Header: Sendable, Hashable, CustomStringConvertible {
        /// The name, as given (HTTP names are case-insensitive).
        public let name: String
        /// The value, without the spaces or tabs around it.
        public let value: String

        /// The longest value accepted, in bytes of UTF-8.
        public static let maximumValueLength = 8_192
        /// The longest name accepted, in bytes.
        public static let maximumNameLength = 256
        /// The most headers one request may have.
        public static let maximumCount = 100

        /// The names a request cannot set (lowercased): the download's own (ranges, validators,
        /// the encoding that keeps lengths and ranges true) and the connection's.
        public static let reservedNames: Set<String> = [
            "range", "if-range", "accept-encoding", "if-match", "if-none-match", "if-modified-since",
            "if-unmodified-since", "host", "content-length", "transfer-encoding", "connection", "keep-alive",
            "proxy-connection", "te", "trailer", "upgrade", "expect",
        ]

        /// A header named `name` with `value`.
        ///
        /// - Throws: `DownloadManagerError.invalidHeader` for a name that is empty, longer than
        ///   `maximumNameLength` or not an HTTP token (letters, digits and `!#$%&'*+-.^_|~` or a backtick), a
        ///   reserved name, or a value longer than `maximumValueLength` bytes or with a control
        ///   character (a CR or LF would smuggle another header, a NUL cut it; a tab is fine).
        public init(_ name: String, _ value: String) throws(DownloadManagerError) {
            func refuse(_ reason: String) -> DownloadManagerError { .invalidHeader(name, reason: reason) }
            guard !name.isEmpty else { throw refuse("a header needs a name") }
            guard name.utf8.count <= Self.maximumNameLength else {
                throw refuse("a header name has at most \(Self.maximumNameLength) bytes")
            }
            guard name.utf8.allSatisfy(Self.isTokenCharacter) else {
                throw refuse("a header name is letters, digits and !#$%&'*+-.^_`|~ only")
            }
            guard !Self.reservedNames.contains(name.lowercased()) else {
                throw refuse("the download sets this header itself (its ranges, validators and connection)")
            }
            let trimmed = value.trimmingSpacesAndTabs
            guard trimmed.utf8.count <= Self.maximumValueLength else {
                throw refuse("a header value has at most \(Self.maximumValueLength) bytes")
            }
            guard !trimmed.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F })
            else { throw refuse("a header value cannot contain a control character (CR, LF, NUL…)") }
            self.name = name
            self.value = trimmed
        }

        /// Parses aria2's `header=` text, `Name: value`.
        ///
        /// - Throws: `DownloadManagerError.invalidHeader` for text without a `:`, or a header that
        ///   `init(_:_:)` refuses.
        public init(parsing text: String) throws(DownloadManagerError) {
            guard let colon = text.firstIndex(of: ":") else {
                throw .invalidHeader(text, reason: "a header is written 'Name: value'")
            }
            try self.init(String(text[..<colon]).trimmingSpacesAndTabs, String(text[text.index(after: colon)...]))
        }

        /// `Name: value`, as `init(parsing:)` reads it.
        public var description: String { "\(name): \(value)" }

        private static func isTokenCharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }
}

extension String {
    /// Without the spaces and tabs at either end (HTTP's optional whitespace).
    fileprivate var trimmingSpacesAndTabs: String {
        let bytes = utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })!
        return String(self[first...last])
    }
}
