import Foundation

extension DownloadManager {
    /// Why an item failed: a kind to act on and one readable line.
    public struct ItemError: Error, LocalizedError, Sendable, Equatable, CustomStringConvertible {
        /// The kinds of failure.
        public enum Kind: String, Sendable, Equatable, CaseIterable {
            /// The server answered a status that is not 2xx (after retries, for transient ones).
            case httpStatus = "http-status"
            /// The connection failed (after retries) or the server's answer did not add up.
            case network
            /// The file could not be written: a directory in the way, a missing or read-only folder,
            /// a full disk, another download to the same file.
            case file
            /// A file the manager did not download is in the way; it is left as it is.
            case fileInTheWay = "file-in-the-way"
            /// The file's digest is not the checksum's; the file was removed.
            case checksumMismatch = "checksum-mismatch"
            /// The server asked to wait longer than `RetryPolicy.maxRetryAfter`.
            case retryAfterTooLong = "retry-after-too-long"
            /// Anything else.
            case other
        }

        /// What kind of failure it is: what a program acts on.
        public var kind: Kind
        /// One line naming what failed: the URL or path, and why.
        public var message: String
        /// The HTTP status, for `httpStatus`.
        public var status: Int?

        /// A failure made by hand (for tests); see the properties.
        package init(kind: Kind, message: String, status: Int? = nil) {
            self.kind = kind
            self.message = message
            self.status = status
        }

        /// The failure that `error` (a download's error) is.
        public init(_ error: any Error) {
            switch error {
            case let failure as ItemError:
                self = failure
            case let status as HTTPStatusError:
                self.init(kind: .httpStatus, message: status.localizedDescription, status: status.status)
            case let tooLong as RetryAfterTooLongError:
                self.init(
                    kind: .retryAfterTooLong, message: tooLong.localizedDescription, status: tooLong.response.status)
            case let download as DownloadError:
                if case .inconsistentResponse = download.kind {
                    self.init(kind: .network, message: download.localizedDescription)
                } else if download.kind == .destinationExists {
                    self.init(kind: .fileInTheWay, message: download.localizedDescription)
                } else {
                    self.init(kind: .file, message: download.localizedDescription)
                }
            case let transport as TransportError:
                self.init(kind: .network, message: transport.localizedDescription)
            default:
                self.init(kind: .other, message: error.localizedDescription)
            }
        }

        public var errorDescription: String? { message }

        public var description: String { message }
    }
}

extension DownloadManager {
    /// The name `ItemError` had before 0.2: kept so that code written against it still builds.
    public typealias Failure = ItemError
}
