import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A download over several connections: the executor that splits a file into ranges
/// (`SegmentMap`), fetches them in parallel into the one `.part` with positional writes, and keeps
/// the map in the `.part.meta` so that a killed process resumes every segment where it stopped.
///
/// - Without a map to resume, the first request asks for `bytes=0-`; an answer `SegmentAnswer.split`
///   accepts splits the file: that connection fetches the first segment (and is stopped at its end),
///   one more connection each fetches the others. Any other answer falls back to one connection
///   (`Download`, from byte 0): a whole file (`SegmentAnswer.isWholeFile`, one too short to split)
///   on that same response, anything else with a new request.
/// - A `.part` whose metadata holds a map of the same download (URL or item), with a validator, the
///   same total, and no segment claiming bytes beyond the `.part`'s end, resumes each unfinished
///   segment with `bytes=A-B` and `If-Range`. Anything else starts over.
/// - A segment answered otherwise than `SegmentAnswer.accept` says starts the file over on one
///   connection; a transport error or an error status on any connection fails the download (its
///   map kept for the resume the manager's retry makes). The other connections are cancelled.
/// - It tells its owner (`DownloadHooks.connectionsUsed`) how many connections it opens from now
///   on, as soon as it knows: one when it does not split or falls back, the ranges' count when it
///   splits into fewer than `connections`, the ranges left when one finishes while others go on. A
///   split opens at most `DownloadHooks.connectionsAllowed`.
/// - The map is written (atomically, beside the `.part`) after each `minimumSegmentSize` bytes and each
///   finished segment; it never claims a byte before it is written.
/// - With `.system` durability the `.part` is flushed to disk after each `PartFile.syncInterval`
///   bytes (of all connections), and the map as it was just before the flush is kept beside the
///   current one (`PartMetadata.syncedSegments`). After a restart of the machine (see
///   `PartMetadata.isWrittenInBoot(_:)`) only that flushed progress is resumed; a `.part` never
///   flushed starts over.
///
/// Connections' callbacks run on the transport's threads, several at once: the state is behind a
/// lock, taken only to decide; writes, the map's file and the transfers' cancellation happen outside
/// it. A write is made under the `.part`'s own lock, and only while the split is still running, so
/// that no write of a stopped connection lands in the file a start over is filling.
final class SegmentedDownload: Sendable {
    /// The smallest segment: a file shorter than twice this is fetched on one connection. Also the
    /// bytes written between two writes of the map (and at each segment's end).
    static let minimumSegmentSize: Int64 = 1 << 20

    private let download: Download
    private let connections: Int
    /// `minimumSegmentSize`, unless the download's hooks say less (a test's).
    private let segmentSize: Int64
    private let state = LockedBox<SplitState>.make(SplitState())

    init(_ download: Download, connections: Int) {
        self.download = download
        self.connections = connections
        segmentSize = max(download.hooks?.segmentSize ?? Self.minimumSegmentSize, 1)
    }

    /// Resumes the map of the `.part`, or asks for the file from byte 0 to split it.
    func start() throws(DownloadError) {
        let part = download.part
        download.controller.onCancel { [self] in
            let handles = state.withLock { state -> [JobHandle] in
                state.phase = .stopped
                return state.handles
            }
            for handle in handles { handle.cancel() }
        }
        if let metadata = try resumable(download.metadata, partLength: part.length), let map = metadata.segments {
            state.withLock {
                $0.phase = .running
                $0.metadata = metadata
            }
            download.hooks?.began(map.doneBytes, map.length)
            let missing = map.missing
            guard !missing.isEmpty else { return finishIfDone(force: true) }
            // No more connections than the run holds slots: the other ranges wait for one to finish.
            let opened = max(1, min(connections, download.hooks?.slots?.count ?? connections))
            download.hooks?.useConnections(min(opened, missing.count))
            state.withLock {
                $0.running = missing.count
                $0.waiting = Array(missing.dropFirst(opened))
            }
            for (index, range) in missing.prefix(opened) {
                connect(segment: index, range: range, probe: false, metadata: metadata)
            }
        } else {
            try part.truncate()
            download.metadata = nil
            probe()
        }
    }

    /// The metadata when it holds a map this download may resume (`PartMetadata.resumableSplit`); nil:
    /// start over. Metadata that names another boot, or none (an older JobKit's), is written again
    /// beside the `.part` (stamped with the running boot) before any byte is, so that a later restart
    /// is told.
    private func resumable(_ found: PartMetadata?, partLength: Int64) throws(DownloadError) -> PartMetadata? {
        let boot = download.part.bootIdentity
        guard
            let (metadata, rewrite) = found?.resumableSplit(
                boot: boot, url: download.url, item: download.item, partLength: partLength)
        else { return nil }
        if rewrite {
            if !(found?.isWrittenInBoot(boot) ?? true) {
                download.hooks?.logger.debug(
                    "the machine restarted since the .part was written: resuming what was flushed",
                    metadata: ["download.resume_bytes": "\(metadata.segments?.doneBytes ?? 0)"])
            }
            try download.part.writeMetadata(metadata)
            download.metadata = metadata
        }
        return metadata
    }

    /// Asks for the whole file as a range, to learn whether it can be split.
    private func probe() {
        let handler = TransferHandler()
        var request = baseRequest()
        request.setValue("bytes=0-", forHTTPHeaderField: "Range")
        var fallsBack = false
        var connection: SegmentWriter?
        // Fewer when the owner gave back slots since (a retry after a fallback to one connection).
        let connections = min(connections, download.hooks?.slots?.count ?? connections)
        /// The one-connection attempt that took over a response of the whole file (not split).
        var single: TransferHandler?
        handler.onResponse = { [self] response in
            let headers = response.lowercasedHeaders
            guard
                var metadata = SegmentAnswer.split(
                    status: response.statusCode, headers: headers, url: download.url, item: download.item),
                let map = SegmentMap.split(
                    length: metadata.total ?? 0, into: connections, minimumSize: segmentSize),
                map.segments.count > 1
            else {
                // One connection from here, whatever comes: the owner may give the other slots away.
                download.hooks?.useConnections(1)
                // A file too short to split, answered whole: one connection writes it from here, with
                // no second request (the `.part` is empty: a range from byte 0 is a start).
                if SegmentAnswer.isWholeFile(status: response.statusCode, headers: headers) {
                    let (_, attempt) = download.makeAttempt(resumingAt: nil)
                    single = attempt
                    return try attempt.onResponse(response)
                }
                fallsBack = true
                return false
            }
            metadata.segments = map
            try download.part.writeMetadata(metadata)
            download.metadata = metadata
            let first = map.segments[0]
            state.withLock {
                $0.phase = .running
                $0.metadata = metadata
                $0.running = map.segments.count
            }
            download.hooks?.useConnections(map.segments.count)
            download.hooks?.began(0, map.length)
            connection = SegmentWriter(index: 0, range: first.start..<first.end, stopsAtEnd: true)
            for index in 1..<map.segments.count {
                let segment = map.segments[index]
                connect(segment: index, range: segment.start..<segment.end, probe: false, metadata: metadata)
            }
            return true
        }
        let receive = { [self] (bytes: UnsafeRawBufferPointer) throws in
            if let single { return try single.onBytes.map { try $0(bytes) } ?? single.onData(Data(bytes)) }
            guard var writer = connection else { return }
            defer { connection = writer }
            try write(bytes, with: &writer)
        }
        handler.onBytes = receive
        handler.onData = { data in try data.withUnsafeBytes { try receive($0) } }
        handler.onComplete = { [self, unowned handler] response, error in
            if let single { return single.onComplete(response, error) }
            if download.controller.isCancelled { return }
            if fallsBack {
                // Not on the transport's thread: the attempt that replaces this one starts on the run's queue.
                return download.controller.queue.async { self.download.attempt(resumingAt: nil) }
            }
            guard let writer = connection else {
                // No split, and no fallback: the response could not be used (its metadata not written).
                return ended(
                    .failed(handler.failure ?? TransportError.readable(error ?? URLError(.unknown), url: download.url)))
            }
            ended(writer.ending(error: handler.failure ?? error, url: download.url, path: download.destination.path))
        }
        start(request, handler: handler)
    }

    /// Fetches `range` of segment `index` on a connection of its own.
    private func connect(segment index: Int, range: Range<Int64>, probe: Bool, metadata: PartMetadata) {
        let handler = TransferHandler()
        var request = baseRequest()
        request.setValue("bytes=\(range.lowerBound)-\(range.upperBound - 1)", forHTTPHeaderField: "Range")
        if let validator = metadata.validator { request.setValue(validator, forHTTPHeaderField: "If-Range") }
        var writer = SegmentWriter(index: index, range: range, stopsAtEnd: false)
        var answer = SegmentAnswer.accept
        var response: URLResponse?
        handler.onResponse = { http in
            response = http
            answer = SegmentAnswer.judge(
                status: http.statusCode, headers: http.lowercasedHeaders, asked: range, metadata: metadata)
            return answer == .accept
        }
        let receive = { [self] (bytes: UnsafeRawBufferPointer) throws in try write(bytes, with: &writer) }
        handler.onBytes = receive
        handler.onData = { data in try data.withUnsafeBytes { try receive($0) } }
        handler.onComplete = { [self, unowned handler] _, error in
            if download.controller.isCancelled { return }
            switch answer {
            case .accept:
                ended(
                    writer.ending(error: handler.failure ?? error, url: download.url, path: download.destination.path))
            case .startOver: ended(.startOver)
            case .fail:
                let result = HTTPReply.validated(Data(), response, nil, url: download.url)
                guard case .failure(let error) = result else { return ended(.failed(URLError(.badServerResponse))) }
                ended(.failed(error))
            }
        }
        start(request, handler: handler)
    }

    private func baseRequest() -> URLRequest {
        var request = URLRequest(url: download.url)
        for (name, value) in download.headers { request.addValue(value, forHTTPHeaderField: name) }
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        return request
    }

    /// Starts a transfer as a run of its own, so that it can be cancelled alone.
    private func start(_ request: URLRequest, handler: TransferHandler) {
        let download = download
        let run = LockedBox<Job<URL>.Controller?>.make(nil)
        let complete = handler.onComplete
        handler.onComplete = { response, error in
            complete(response, error)
            run.withLock { $0 }?.finish(download.destination)
        }
        let job = Job<URL> { controller in
            run.withLock { $0 = controller }
            download.transport.start(
                request, handler: handler, for: controller, context: download.context, logger: download.hooks?.logger,
                throttle: download.hooks?.throttle)
        }
        let queue = download.controller.queue
        let handle = job.perform(on: queue, resultQueue: queue) { _ in }
        let stopped = state.withLock { state -> Bool in
            state.handles.append(handle)
            return state.phase == .stopped
        }
        if stopped { handle.cancel() }
    }

    /// Writes the bytes of a connection at its position, and records them in the map.
    private func write(_ bytes: UnsafeRawBufferPointer, with writer: inout SegmentWriter) throws {
        let (count, done) = try writer.take(bytes.count, path: download.part.part)
        guard count > 0 else {
            if done { throw SegmentWriter.Finished() }
            return
        }
        try download.part.write(
            UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: writer.position,
            unless: { state.withLock { $0.phase != .running } })
        writer.position += Int64(count)
        let recorded = state.withLock {
            $0.record(
                count, in: writer.index, syncs: download.durability == .system, syncInterval: download.syncInterval,
                persistInterval: segmentSize)
        }
        download.hooks?.received(count)
        if let progress = recorded.progress { download.controller.report(progress: progress) }
        var synced: PartMetadata?
        if let sync = recorded.sync {
            try download.part.sync()
            synced = state.withLock { $0.recordSync(sync) }
        }
        if let map = synced ?? recorded.persist { persistMap(map) }
        if done, writer.stopsAtEnd { throw SegmentWriter.Finished() }
    }

    /// Writes the map beside the `.part`, unless a newer one was written or the split stopped.
    private func persistMap(_ metadata: PartMetadata) {
        let ticket = state.withLock { $0.takeTicket() }
        try? download.part.writeMetadata(metadata) { state.withLock { !$0.mayWrite(ticket) } }
    }

    /// A connection ended: decides what that means for the download, then does it.
    private func ended(_ ending: SegmentWriter.Ending) {
        enum Action {
            case none, finalize(PartMetadata), stop([JobHandle], then: SegmentWriter.Ending, PartMetadata?)
            /// A segment finished while others go on: this many connections are left.
            case using(Int)
            /// A segment finished and a waiting one takes its connection.
            case next(Int, Range<Int64>, PartMetadata)
        }
        let action = state.withLock { state -> Action in
            guard state.phase != .stopped else { return .none }
            switch ending {
            case .finished:
                state.running -= 1
                if !state.waiting.isEmpty, let metadata = state.metadata {
                    let next = state.waiting.removeFirst()
                    return .next(next.index, next.range, metadata)
                }
                if state.running > 0 { return .using(state.running) }
                guard state.running == 0, let metadata = state.metadata else { return .none }
                state.phase = .stopped
                return .finalize(metadata)
            case .startOver, .failed:
                state.phase = .stopped
                return .stop(state.handles, then: ending, state.metadata)
            }
        }
        switch action {
        case .none: break
        case .using(let count): download.hooks?.useConnections(count)
        case .next(let index, let range, let metadata):
            connect(segment: index, range: range, probe: false, metadata: metadata)
        case .finalize(let metadata):
            guard metadata.segments?.isComplete == true else {
                return download.end(
                    .failure(
                        DownloadError(
                            kind: .inconsistentResponse("segments left incomplete"), path: download.destination.path)))
            }
            finishIfDone(force: false)
        case .stop(let handles, let ending, let metadata):
            for handle in handles { handle.cancel() }
            if case .failed(let error) = ending {
                // Kept for a resume: the map as it stands (no write of a stopped split lands after it).
                if let metadata { try? download.part.writeMetadata(metadata) }
                return download.end(.failure(error))
            }
            do {
                try download.part.truncate()
                download.metadata = nil
                download.hooks?.useConnections(1)
                download.controller.queue.async { self.download.attempt(resumingAt: nil) }
            } catch {
                download.end(.failure(error))
            }
        }
    }

    /// Every segment is written: the `.part` takes the destination's name, on the run's queue.
    private func finishIfDone(force: Bool) {
        if force { state.withLock { $0.phase = .stopped } }
        download.controller.queue.async { self.download.finalize() }
    }
}
