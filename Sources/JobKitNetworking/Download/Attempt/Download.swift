import Foundation
import JobKit
import Tracing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One download: its attempts (a resume, then possibly a fresh start) and its end — the executor of
/// `DownloadAttemptStateMachine`, which decides what each response and piece of body means.
///
/// Runs sequentially: the first attempt starts on the run's queue; each attempt's callbacks one at
/// a time, on the transport's thread (the client's serial delegate queue, or an AsyncHTTPClient
/// event loop or SwiftNIO's blocking pool, one callback after the other); the attempt that
/// replaces one, on the run's queue.
// Safety: used sequentially, as above.
final class Download: @unchecked Sendable {
    let url: URL
    let destination: URL
    let part: PartFile
    let transport: any HTTPTransport
    let controller: Job<URL>.Controller
    let durability: Durability
    let hooks: DownloadHooks?
    /// Sent with every request, before the download's own (which a caller cannot set: see
    /// `DownloadManager.Header.reservedNames`).
    let headers: [(name: String, value: String)]
    /// The manager's item whose `.part` this is (see `PartMetadata.item`); nil for a plain download.
    let item: UInt64?
    /// The metadata of the `.part`, as read at the start or written for the current response.
    var metadata: PartMetadata?
    /// The context the download's body ran in: a traced run's span, under which each request is one.
    let context = ServiceContext.current
    /// The bytes a `.part` is written between two flushes with `.system` durability.
    let syncInterval: Int64
    /// The length of the `.part` the current attempt has written up to.
    private var written: Int64 = 0
    /// The bytes written since the `.part` was last flushed (or the current attempt started).
    private var unsynced: Int64 = 0

    init(
        url: URL, destination: URL, part: PartFile, transport: any HTTPTransport, controller: Job<URL>.Controller,
        durability: Durability, hooks: DownloadHooks?, headers: [(name: String, value: String)] = [],
        item: UInt64? = nil
    ) {
        self.headers = headers
        self.item = item
        self.url = url
        self.destination = destination
        self.part = part
        self.transport = transport
        self.controller = controller
        self.durability = durability
        self.hooks = hooks
        syncInterval = max(hooks?.syncInterval ?? PartFile.syncInterval, 1)
        metadata = part.readMetadata()
    }

    /// The length of the `.part` that can be resumed, else nil. After a restart of the machine
    /// (see `PartMetadata.isWrittenInBoot(_:)`) that is the length flushed before it: the `.part`
    /// is cut to it. Its metadata is then stamped with the running boot (as is an older JobKit's,
    /// which names none) before any byte is written, so that a later restart is told.
    func resumableLength(blindResume: Bool) throws(DownloadError) -> Int64? {
        let length = part.length
        let restarted = metadata.map { !$0.isWrittenInBoot(part.bootIdentity) } ?? false
        let offset = DownloadAttemptStateMachine.resumeOffset(
            partLength: length, metadata: metadata, url: url, item: item, blindResume: blindResume,
            restarted: restarted)
        if let offset, let kept = metadata, restarted || kept.boot == nil {
            if offset < length {
                hooks?.logger.debug(
                    "the machine restarted since the .part was written: resuming what was flushed",
                    metadata: ["download.part_length": "\(length)", "download.resume_offset": "\(offset)"])
                try part.truncate(to: offset)
            }
            try part.writeMetadata(kept)
        }
        return offset
    }

    /// Notes `count` more bytes written by the body; with `.system` durability, flushes the
    /// `.part` once `syncInterval` bytes were written since the last flush (or the attempt's start)
    /// and records the flushed length in its metadata. Called on the transport's thread.
    private func wrote(_ count: Int) throws(DownloadError) {
        written += Int64(count)
        guard durability == .system else { return }
        unsynced += Int64(count)
        guard unsynced >= syncInterval, var kept = metadata else { return }
        unsynced = 0
        try part.sync()
        kept.synced = written
        try part.writeMetadata(kept)
        metadata = kept
    }

    /// Requests the file, from `offset` when resuming, and carries out what the attempt's state
    /// machine decides.
    func attempt(resumingAt offset: Int64?) {
        let (request, handler) = makeAttempt(resumingAt: offset)
        hooks?.logger.debug("request sent", metadata: ["download.resume_offset": "\(offset ?? 0)"])
        transport.start(
            request, handler: handler, for: controller, context: context, logger: hooks?.logger,
            throttle: hooks?.throttle)
    }

    /// The request of an attempt from `offset` (nil: from the start), and the handler that carries
    /// out what its state machine decides — also for a response to another request that is the
    /// whole file (a segmented download's first one, for a file it does not split).
    func makeAttempt(resumingAt offset: Int64?) -> (URLRequest, TransferHandler) {
        var machine = DownloadAttemptStateMachine(
            url: url, path: destination.path, resumingAt: offset, metadata: metadata, item: item)
        var request = URLRequest(url: url)
        for (name, value) in headers { request.addValue(value, forHTTPHeaderField: name) }
        // Last, so that they win: a caller's header never changes a range or a validator.
        for (name, value) in machine.requestHeaders { request.setValue(value, forHTTPHeaderField: name) }
        let handler = TransferHandler()
        // A fresh attempt's `.part` is empty: its response writes a small metadata file, and each
        // body part goes to the page cache. A resume's response may cut a large `.part`, and with
        // `.system` durability every `syncInterval` bytes wait for the disk.
        handler.isQuick = offset == nil && durability != .system
        let logger = hooks?.logger
        handler.onResponse = { [self] response in
            logger?.debug("response received", metadata: ["http.status": "\(response.statusCode)"])
            switch try machine.received(status: response.statusCode, headers: response.lowercasedHeaders) {
            case .write(let start, let total, let truncating, let newMetadata):
                if truncating {
                    try part.truncate()
                } else if start > 0 {
                    try part.seek(to: start)
                }
                if let newMetadata {
                    try part.writeMetadata(newMetadata)
                    metadata = newMetadata
                }
                written = start
                unsynced = 0
                hooks?.began(start, total)
                return true
            case .startOver:
                return false
            case .readErrorBody, .finalizeWhenDone:
                return true
            }
        }
        func receive(_ bytes: UnsafeRawBufferPointer) throws {
            guard case .write(let progress) = try machine.received(bytes) else { return }
            try part.write(bytes)
            try wrote(bytes.count)
            hooks?.received(bytes.count)
            if let progress { controller.report(progress: progress) }
        }
        handler.onBytes = receive
        handler.onData = { data in try data.withUnsafeBytes { try receive($0) } }
        handler.onComplete = { [self] response, error in
            if controller.isCancelled { return part.close() }
            switch machine.ended(withError: error != nil) {
            case .startOver:
                do {
                    try part.truncate()
                    metadata = nil
                    // Not on the delegate queue, which every transfer of the client shares.
                    controller.queue.async { self.attempt(resumingAt: nil) }
                } catch {
                    end(.failure(error))
                }
            case .failWithStatus(let body):
                end(HTTPReply.validated(body, response, nil, url: url).map { _ in destination })
            case .failWithTransportError:
                end(.failure(TransportError.readable(error ?? URLError(.unknown), url: url)))
            case .failWithoutResponse:
                end(.failure(TransportError(URLError(.badServerResponse), url: url)))
            case .fail(let inconsistent):
                end(.failure(inconsistent))
            case .finalize:
                // A hook's checksum or an fsync takes milliseconds: off the delegate queue, which every
                // transfer of the client shares.
                controller.queue.async { self.finalize() }
            }
        }
        return (request, handler)
    }

    /// Gives the complete `.part` the destination's name and completes the run, in one step on the
    /// run's queue. The rename happens only if the run is not cancelled by then — checked under the
    /// part's lock, which the cancel handler's `close()` takes too — and the run completes right
    /// after it, with no hop through a queue: a cancel comes first (no file under the name; the run
    /// ends cancelled) or finds the run finished. Only a cancel that lands between the check and
    /// `finish` (the rename call, the folder's flush with `.system`, closing the `.part`) ends the
    /// run cancelled with its file in place: closing that needs the core to let a body commit (a
    /// cancel after it too late), which its contract — a cancel ends the run at once — does not.
    func finalize() {
        let renamed = Result { () throws -> Bool in
            if let hooks { try hooks.beforeFinalize(part, part.length) }
            return try part.finalize(durability, unless: { controller.isCancelled })
        }
        part.close()
        switch renamed {
        case .success(true): controller.finish(destination)
        case .success(false): break  // cancelled: the run has ended; the `.part` stays for a resume
        case .failure(let error): controller.fail(with: error)
        }
    }

    /// Ends the download before its finalize (a failure): closes the `.part`, removing it if it holds
    /// no byte, and completes the run on its queue.
    func end(_ result: Result<URL, any Error>) {
        part.close(removingIfEmpty: true)
        controller.completeOnQueue(with: result)
    }
}
