import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job where Value == URL {
    /// Downloads `url` to `destination` through `transport`, streaming into `destination.part`; the
    /// run finishes with `destination`.
    ///
    /// `transport` is what the bytes come through: a `TransferClient`'s URLSession (the default:
    /// `.urlSession(.shared)`), or an AsyncHTTPClient (SwiftNIO; faster on Linux, see
    /// `DownloadTransport`).
    ///
    /// - Checked first, before any byte is requested: a destination that is a directory, a folder
    ///   that is missing or not writable, and a second download to the same destination fail with a
    ///   `DownloadError`: at once in this process; when another process holds the `.part`'s lock,
    ///   after a quarter second (a child being started holds it for a moment, until it runs its program).
    /// - The file appears under its name only once complete: the `.part` takes the destination's
    ///   name in one atomic rename that never replaces (a file or folder that appeared there meanwhile
    ///   fails the run with `destinationExists`, both left as they are). Every file operation is
    ///   relative to the destination's folder, never following a symbolic link. Nothing but the
    ///   `.part` and its `.part.meta` is ever removed. A destination name longer than 241 bytes has its
    ///   sidecars named `.jobkit-part-HASH.part` (and `.meta`).
    /// - Cancelling the run keeps the `.part` and its metadata for a later resume; by the time
    ///   `cancel()` returns, the destination is free for another download. A `.part` that is complete
    ///   takes the destination's name only while the run is not cancelled, and the run finishes in
    ///   that same step: a later cancel is too late (the run ends finished, with its file). Only a
    ///   cancel that lands during the rename and the few calls after it (with `.system`, the folder's
    ///   flush) ends the run cancelled with the file in place.
    /// - `durability` says what a finished file survives. `.process` (the default): the process
    ///   being killed or crashing at any moment, with no `fsync` (as curl and aria2c). `.system`:
    ///   also a power loss or an operating-system crash — the `.part` is flushed to disk before the
    ///   rename and its folder after (a few milliseconds per file), and every 16 MiB while it is
    ///   written. After a restart of the machine a `.part` resumes only what was flushed (with
    ///   `.process`, nothing: it starts over), never bytes the restart may have lost. See `Durability`.
    /// - A `.part` left by an earlier attempt (cancelled, failed, killed) is resumed only when its
    ///   metadata proves it is the same resource: the request carries `If-Range` with the stored ETag
    ///   or Last-Modified, and a 206 is accepted only when its `Content-Range` starts where the
    ///   `.part` ends, its total matches and it carries that same validator (a server that ignores
    ///   `If-Range` sends its current version's). Anything else starts over from zero. A 416 for a `.part`
    ///   already as long as the stored total finalizes it. Without a validator the download starts
    ///   over, unless `blindResume` is true (then a bare `Range` request is trusted).
    ///
    /// - The request asks for the file as stored (`Accept-Encoding: identity`). A body the server
    ///   content-codes anyway is written as the transport hands it over (URLSession decodes it; an
    ///   AsyncHTTPClient without decompression, as a `DownloadManager`'s, writes it as sent), with
    ///   no announced length to check and no resume.
    /// - A 200 whose `Content-Range` does not start at byte 0 fails (`inconsistentResponse`),
    ///   keeping the `.part`: it is a part that says it is the whole.
    ///
    /// Progress is reported through the controller. The body is written to disk as it arrives, on
    /// the transport's own thread (an AsyncHTTPClient event loop only while its writes are quick:
    /// see `DownloadTransport`); the run
    /// completes on the queue it was performed on. Transport
    /// failures are `TransportError`s, non-2xx statuses `HTTPStatusError`s — both leave the `.part`
    /// for a later resume, when it holds a byte (an empty one is removed, with its metadata).
    ///
    /// ```swift
    /// let file = try await Job<URL>.download(from: url, to: folder.appending(path: "big.bin")).value
    ///
    /// let api = TransferClient(maxConnectionsPerHost: 4)
    /// let report = try await Job<URL>.download(from: reportURL, to: destination, transport: .urlSession(api)).value
    ///
    /// let http = HTTPClient(eventLoopGroupProvider: .singleton)
    /// let image = try await Job<URL>.download(from: imageURL, to: other, transport: .asyncHTTPClient(http)).value
    /// try await http.shutdown()
    /// ```
    public static func download(
        from url: URL, to destination: URL, transport: DownloadTransport = .urlSession(.shared),
        blindResume: Bool = false, durability: Durability = .process
    ) -> Job<URL> {
        download(
            from: url, to: destination, transport: transport, blindResume: blindResume, durability: durability,
            hooks: nil)
    }

    /// `download(from:to:transport:blindResume:durability:)`, telling `hooks` of its bytes and its
    /// end (for `DownloadManager`). With `folder`, the file is `name` in that open folder (the
    /// manager's); `replacing` lets the finished file replace one under its name. `headers` go with
    /// every request; `item` makes the `.part` the manager's item's (resumable from another URL).
    /// With `connections` above 1, the file is fetched over that many connections when the server
    /// allows (`SegmentedDownload`).
    static func download(
        from url: URL, to destination: URL, transport: any HTTPTransport, blindResume: Bool, durability: Durability,
        hooks: DownloadHooks?, folder: (handle: any DownloadFolder, name: String)? = nil, replacing: Bool = false,
        headers: [(name: String, value: String)] = [], item: UInt64? = nil, connections: Int = 1
    ) -> Job<URL> {
        Job { controller in
            let part: PartFile
            let open = { () throws(DownloadError) -> PartFile in
                guard let folder else { return try PartFile.open(destination: destination) }
                return try PartFile.open(folder.name, in: folder.handle, replacing: replacing)
            }
            switch PartSlot.open(open, for: controller) {
            case .opened(let opened): part = opened
            case .failed(let error): return controller.fail(with: error)
            case .cancelled: return
            }
            let download = Download(
                url: url, destination: destination, part: part, transport: transport, controller: controller,
                durability: durability, hooks: hooks, headers: headers, item: item)
            do {
                if connections > 1 { return try SegmentedDownload(download, connections: connections).start() }
                let resume = try download.resumableLength(blindResume: blindResume)
                if resume == nil { try part.truncate() }
                download.attempt(resumingAt: resume)
            } catch {
                part.close(removingIfEmpty: true)
                controller.fail(with: error)
            }
        }
    }
}

/// The `.part` of a download, as its cancellation sees it. Opening holds the lock, so that when
/// `cancel()` returns the destination is free again: either the body had not opened the `.part`
/// (and now never will) or the cancel handler closed it.
private enum PartSlot {
    case empty
    case open(PartFile)
    case cancelled

    enum Opening {
        case opened(PartFile)
        case failed(DownloadError)
        case cancelled
    }

    /// Opens the `.part` (through `open`) for the run of `controller`, closed when the run is cancelled.
    static func open(_ open: () throws(DownloadError) -> PartFile, for controller: Job<URL>.Controller) -> Opening {
        let slot = LockedBox<PartSlot>.make(.empty)
        controller.onCancel {
            let part = slot.withLock { slot -> PartFile? in
                defer { slot = .cancelled }
                if case .open(let part) = slot { return part }
                return nil
            }
            part?.close()
        }
        return slot.withLock { slot -> Opening in
            guard case .empty = slot else { return .cancelled }
            do throws(DownloadError) {
                let part = try open()
                slot = .open(part)
                return .opened(part)
            } catch {
                return .failed(error)
            }
        }
    }
}
