import Dispatch
import Foundation
import JobKit

extension DownloadManager {
    /// How a manager runs its downloads and reports them.
    public struct Configuration: Sendable {
        /// At most this many downloads run at once (the width); below 1 counts as 1. Default 8.
        public var maxConcurrent: Int
        /// At most this many of them to one host (`host:port`); nil: only `maxConcurrent` limits.
        /// A pending item whose host is full waits, while items of other hosts start. Default nil.
        public var maxPerHost: Int?
        /// How transient failures (dropped connections, timeouts, 408, 429, 5xx) are retried: the
        /// policy of `retryingTransientFailures`. A retry resumes the `.part` where it ends.
        public var retry: RetryPolicy
        /// Where `onUpdate` runs. Default: the main queue.
        public var resultQueue: DispatchQueue
        /// Progress alone is delivered at most once per interval (state changes at once). Default 100 ms.
        public var progressInterval: Duration
        /// Speeds are averaged over this window. Default 5 s.
        public var speedWindow: Duration
        /// What the downloads go through. nil (the default): a `TransferClient` when `client` is
        /// set; else an AsyncHTTPClient the manager makes and shuts down when it is released, with
        /// as many connections per host as the manager runs downloads to it (`maxConcurrent`, as
        /// `setMaxConcurrent` changes it, and `maxPerHost`: no download waits for a connection),
        /// redirects followed, bodies as sent, and a transfer silent for 60 s failing as timed out.
        /// See `DownloadTransport`.
        public var transport: DownloadTransport?
        /// The URLSession client the downloads go through when `transport` is nil: the same as
        /// `transport: .urlSession(client)`. Default nil.
        public var client: TransferClient?
        /// Where the download jobs run (never the result queue). Default: a global queue.
        public var queue: DispatchQueue
        /// What a completed file and the journal survive. `.process` (default): the process being
        /// killed or crashing at any moment — no completed file is lost or fetched again, partial
        /// ones resume — with no `fsync` at all (as curl and aria2c). `.system`: also a power loss
        /// or an operating-system crash — each file is synced before it takes its name and its
        /// folder after, and the journal after each add and before each file takes its name (a few
        /// milliseconds per file). See `Durability`.
        public var durability: Durability
        /// Whether items the journal holds as pending (or that were running when the last manager
        /// stopped) start when the manager opens. True (the default): they do. False: they come back
        /// `suspended` (the journal keeps them pending, untouched) and start when resumed or added
        /// again with the same URL, name and checksum — `jobkit download` downloads only what its
        /// command names, so an earlier command's leftovers neither run nor hold it up.
        public var startsRestoredItems = true
        /// Where tests act in the middle of the manager's work.
        var testHooks = TestHooks()

        /// A configuration; every parameter has the default its property describes.
        public init(
            maxConcurrent: Int = 8, maxPerHost: Int? = nil, retry: RetryPolicy = RetryPolicy(),
            resultQueue: DispatchQueue = .main, progressInterval: Duration = .milliseconds(100),
            speedWindow: Duration = .seconds(5), client: TransferClient? = nil, queue: DispatchQueue = .global(),
            durability: Durability = .process, transport: DownloadTransport? = nil
        ) {
            self.transport = transport
            self.maxConcurrent = maxConcurrent
            self.maxPerHost = maxPerHost
            self.retry = retry
            self.resultQueue = resultQueue
            self.progressInterval = progressInterval
            self.speedWindow = speedWindow
            self.client = client
            self.queue = queue
            self.durability = durability
        }
    }

    /// How transient failures are retried: the parameters of `retryingTransientFailures`.
    public struct RetryPolicy: Sendable, Equatable {
        /// Attempts in all, the first included; 1 never retries.
        public var attempts: Int
        /// The wait before each retry.
        public var backoff: Backoff
        /// A `Retry-After` longer than this fails the item at once (`RetryAfterTooLong`).
        public var maxRetryAfter: Duration

        /// A policy; the defaults are `retryingTransientFailures`'s: 4 attempts, 200 ms doubling up to
        /// 5 s with 20% jitter, `Retry-After` honoured up to 5 minutes.
        public init(
            attempts: Int = 4,
            backoff: Backoff = .exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2),
            maxRetryAfter: Duration = .seconds(300)
        ) {
            self.attempts = attempts
            self.backoff = backoff
            self.maxRetryAfter = maxRetryAfter
        }

        /// One attempt, no retry.
        public static let none = RetryPolicy(attempts: 1, backoff: .none)
    }

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

        /// A request; see the properties.
        public init(url: URL, name: String? = nil, checksum: Checksum? = nil, replacesExistingFile: Bool = false) {
            self.url = url
            self.name = name
            self.checksum = checksum
            self.replacesExistingFile = replacesExistingFile
        }
    }

    /// Where an item is.
    ///
    /// `pending → running → (verifying →) completed | failed`; `suspend` makes a pending or running
    /// item `suspended`, `cancel` makes any unfinished one `cancelled`, and `resume` queues a
    /// suspended, failed or cancelled one again (`pending`). Only `completed` is never left, but by
    /// `remove`.
    public enum State: Sendable, Equatable, CustomStringConvertible {
        /// Waiting for a free slot (of the width, or of its host).
        case pending
        /// Downloading (retries included).
        case running
        /// Downloaded; its checksum is being computed before it takes its name.
        case verifying
        /// Stopped by `suspend`, its `.part` kept for `resume`.
        case suspended
        /// The file is in the directory under its name (verified, when it has a checksum).
        case completed
        /// Gave up; the failure says why. The `.part` is kept for a later `resume`, except after a
        /// checksum mismatch (then nothing of it is left).
        case failed(Failure)
        /// Stopped by `cancel`; its `.part` was removed.
        case cancelled

        /// Whether the item is waiting, running or verifying: the manager is not idle while one is.
        public var isActive: Bool {
            switch self {
            case .pending, .running, .verifying: true
            case .suspended, .completed, .failed, .cancelled: false
            }
        }

        /// One lower-case word: `pending`, `running`, `verifying`, `suspended`, `completed`,
        /// `failed`, `cancelled` (for logs and JSON).
        public var name: String {
            switch self {
            case .pending: "pending"
            case .running: "running"
            case .verifying: "verifying"
            case .suspended: "suspended"
            case .completed: "completed"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        }

        /// The name, and the reason of a failure: `failed: HTTP 404 Not Found for …`.
        public var description: String {
            if case .failed(let failure) = self { return "failed: \(failure.message)" }
            return name
        }
    }

    /// Why an item failed: a kind to act on and one readable line.
    public struct Failure: Error, LocalizedError, Sendable, Equatable, CustomStringConvertible {
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

        /// The kind.
        public var kind: Kind
        /// One line naming what failed: the URL or path, and why.
        public var message: String
        /// The HTTP status, for `httpStatus`.
        public var status: Int?

        /// A failure; see the properties.
        public init(kind: Kind, message: String, status: Int? = nil) {
            self.kind = kind
            self.message = message
            self.status = status
        }

        /// The failure that `error` (a download's error) is.
        public init(_ error: any Error) {
            switch error {
            case let failure as Failure:
                self = failure
            case let status as HTTPStatusError:
                self.init(kind: .httpStatus, message: status.localizedDescription, status: status.status)
            case let tooLong as RetryAfterTooLong:
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

        /// The message.
        public var errorDescription: String? { message }

        /// The message.
        public var description: String { message }
    }

    /// Bytes of one item (or all), with speed and time remaining.
    public struct ByteProgress: Sendable, Equatable {
        /// Bytes in the file so far: a resumed `.part`'s bytes count from the start.
        public var received: Int64
        /// The file's length, once the server said (nil before, or when it never does).
        public var expected: Int64?
        /// Bytes per second, averaged over `Configuration.speedWindow`; 0 when nothing moves.
        public var bytesPerSecond: Double
        /// Seconds left at that speed; nil when the length or the speed is unknown (or zero).
        public var secondsRemaining: Double?

        /// A progress; see the properties.
        public init(received: Int64, expected: Int64?, bytesPerSecond: Double = 0, secondsRemaining: Double? = nil) {
            self.received = received
            self.expected = expected
            self.bytesPerSecond = bytesPerSecond
            self.secondsRemaining = secondsRemaining
        }

        /// `received / expected`, in `0...1`; nil while the length is unknown.
        public var fraction: Double? {
            guard let expected else { return nil }
            guard expected > 0 else { return 1 }
            return min(max(Double(received) / Double(expected), 0), 1)
        }
    }

    /// One item: what was asked, where it is, and its bytes.
    public struct Item: Sendable, Equatable, Identifiable {
        /// Its id.
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

        /// An item as a manager reports it (made by hand for a display's tests, say); `file` is
        /// `directory/name`.
        public init(
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

    /// Every item's bytes added up, with the counts of each state. Failed and cancelled items are
    /// counted, but their bytes are not.
    public struct Totals: Sendable, Equatable {
        /// The bytes in the files so far of every item whose length is known and that did not fail
        /// and was not cancelled (completed ones included): the bytes `expected` counts, so never
        /// more than it (`fraction` stays within `0...1`).
        public var received: Int64
        /// The sum of the lengths known so far of the same items (completed items' sizes, running
        /// ones' totals).
        public var expected: Int64
        /// The bytes so far of the items left out of `received` because their length is not known
        /// (a server that sends no length, a restored `.part` before its response): all the bytes
        /// in the files are `received + receivedOfUnknownLength`.
        public var receivedOfUnknownLength: Int64
        /// Active items (pending, running, verifying) whose length is not known yet (pending ones,
        /// mostly): while there are some, `expected` leaves them out and `secondsRemaining` is nil.
        public var itemsOfUnknownLength: Int
        /// All downloads' speed, averaged over `Configuration.speedWindow`.
        public var bytesPerSecond: Double
        /// Seconds until every active item is done at that speed (suspended ones wait); nil while a
        /// length or the speed is unknown.
        public var secondsRemaining: Double?
        /// How many items are in each state, by `State.name`.
        public var pending = 0
        /// Running ones (verifying included).
        public var running = 0
        /// Suspended ones.
        public var suspended = 0
        /// Completed ones.
        public var completed = 0
        /// Failed ones.
        public var failed = 0
        /// Cancelled ones.
        public var cancelled = 0

        /// Every item.
        public var count: Int { pending + running + suspended + completed + failed + cancelled }

        /// `received / expected`, in `0...1`; nil while no length is known.
        public var fraction: Double? {
            guard expected > 0 else { return nil }
            return min(max(Double(received) / Double(expected), 0), 1)
        }

        /// Totals with these bytes and speed and no item counted (add the counts after).
        public init(
            received: Int64 = 0, expected: Int64 = 0, receivedOfUnknownLength: Int64 = 0, itemsOfUnknownLength: Int = 0,
            bytesPerSecond: Double = 0, secondsRemaining: Double? = nil
        ) {
            self.received = received
            self.expected = expected
            self.receivedOfUnknownLength = receivedOfUnknownLength
            self.itemsOfUnknownLength = itemsOfUnknownLength
            self.bytesPerSecond = bytesPerSecond
            self.secondsRemaining = secondsRemaining
        }
    }

    /// What happened to the items, in order. Never dropped or merged.
    public enum Event: Sendable, Equatable {
        /// The item changed state (an added or restored item's first event gives its first state);
        /// the item as it was then.
        case changed(Item)
        /// The item was removed.
        case removed(Item)
        /// The manager became idle: nothing pending, running or verifying. Sent once each time it
        /// drains, after the last item's final state.
        case allFinished(Summary)
    }

    /// One delivery to `onUpdate`: the events since the previous one, and where everything is now.
    public struct Update: Sendable {
        /// Every event since the previous update, in the order they happened; none is ever dropped.
        public var events: [Event]
        /// Every item, in the order added, as it is now (newer than `events`' copies).
        public var items: [Item]
        /// All items added up, now.
        public var totals: Totals

        /// An update; see the properties.
        public init(events: [Event], items: [Item], totals: Totals) {
            self.events = events
            self.items = items
            self.totals = totals
        }
    }

    /// Where every item ended up: the payload of `Event.allFinished` and `waitUntilFinished()`.
    public struct Summary: Sendable, Equatable {
        /// Every item (completed, failed, cancelled, suspended — or active, for a summary taken by
        /// `close()` or a cancelled wait), in the order added.
        public var items: [Item]
        /// The totals.
        public var totals: Totals

        /// A summary; see the properties.
        public init(items: [Item], totals: Totals) {
            self.items = items
            self.totals = totals
        }

        /// The completed items.
        public var completed: [Item] { items.filter { $0.state == .completed } }
        /// The failed items; each one's `state` carries its `Failure`.
        public var failed: [Item] { items.filter { if case .failed = $0.state { true } else { false } } }
        /// The cancelled items.
        public var cancelled: [Item] { items.filter { $0.state == .cancelled } }
        /// The suspended items.
        public var suspended: [Item] { items.filter { $0.state == .suspended } }
        /// Whether every item completed.
        public var allSucceeded: Bool { items.allSatisfy { $0.state == .completed } }
    }
}

/// Why a `DownloadManager` refused to open or to take a request.
public enum DownloadManagerError: Error, LocalizedError, Equatable, Sendable {
    /// The file name cannot be used: empty, `.` or `..`, with a `/`, a NUL or a control character,
    /// too long, or one the manager keeps for itself (its journal, a `.part`).
    case invalidName(String, reason: String)
    /// Another item of the manager has this file name (with another URL or checksum).
    case nameTaken(String, by: DownloadManager.ItemID)
    /// Not an `http` or `https` URL with a host.
    case unsupportedURL(String)
    /// No item has this id (it was removed, or never existed).
    case unknownItem(DownloadManager.ItemID)
    /// Another manager, in this process or another one, has the directory open.
    case directoryInUse(String)
    /// The directory (or its journal) cannot be created, opened, read or written.
    case cannotUseDirectory(String, reason: String)
    /// The journal was written by a newer version of JobKit, or is not a journal: it is left as it is.
    case unsupportedJournal(String, reason: String)
    /// The manager was closed.
    case closed

    /// One line naming what was refused and why.
    public var errorDescription: String? {
        switch self {
        case .invalidName(let name, let reason): "invalid file name '\(name)': \(reason)"
        case .nameTaken(let name, let id): "the file name '\(name)' is already taken by download \(id)"
        case .unsupportedURL(let url): "cannot download \(url): only http and https URLs with a host are supported"
        case .unknownItem(let id): "no download \(id) in this manager"
        case .directoryInUse(let path):
            "\(path) is in use by another download manager (in this process or another one)"
        case .cannotUseDirectory(let path, let reason): "cannot use \(path): \(reason)"
        case .unsupportedJournal(let path, let reason): "cannot read the download journal \(path): \(reason)"
        case .closed: "the download manager is closed"
        }
    }
}
