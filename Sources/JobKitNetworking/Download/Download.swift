import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One download: its attempts (a resume, then possibly a fresh start) and its end.
///
/// Runs sequentially: the first attempt starts on the run's queue; each attempt's callbacks one at
/// a time, on the transport's thread (the client's serial delegate queue, or SwiftNIO's blocking
/// pool, one callback after the other); the attempt that replaces one, on the run's queue.
// Safety: used sequentially, as above.
final class Download: @unchecked Sendable {
    let url: URL
    let destination: URL
    let part: PartFile
    let transport: DownloadTransport
    let controller: Job<URL>.Controller
    let durability: Durability
    let hooks: DownloadHooks?
    /// The metadata of the `.part`, as read at the start or written for the current response.
    var metadata: PartMetadata?

    init(
        url: URL, destination: URL, part: PartFile, transport: DownloadTransport, controller: Job<URL>.Controller,
        durability: Durability, hooks: DownloadHooks?
    ) {
        self.url = url
        self.destination = destination
        self.part = part
        self.transport = transport
        self.controller = controller
        self.durability = durability
        self.hooks = hooks
        metadata = part.readMetadata()
    }

    /// The length of the `.part` when it can be resumed, else nil.
    func resumableLength(blindResume: Bool) -> Int64? {
        let length = part.length
        guard length > 0 else { return nil }
        guard let metadata else { return blindResume ? length : nil }
        guard metadata.url == url.absoluteString, metadata.validator != nil || blindResume else { return nil }
        if let total = metadata.total, length > total { return nil }
        return length
    }

    /// What an attempt does with the response it got.
    private enum Mode {
        case waiting
        case writing
        case errorBody(Data)
        case startOver
        case alreadyComplete
    }

    /// Requests the file, from `offset` when resuming.
    func attempt(resumingAt offset: Int64?) {
        var request = URLRequest(url: url)
        // The file as the server keeps it: ranges, lengths and checksums are of those bytes.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if let offset {
            request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range")
            if let validator = metadata?.validator { request.setValue(validator, forHTTPHeaderField: "If-Range") }
        }
        let handler = TransferHandler()
        var mode = Mode.waiting
        var written: Int64 = 0
        var total: Int64?
        var reported: Int64 = -1
        handler.onResponse = { [self] response in
            mode = try decide(response, resumingAt: offset)
            if case .writing = mode {
                // A Content-Range means something only in a 206 (`decide` refused a contradictory one).
                let range = response.statusCode == 206 ? ContentRange(response.lowercasedHeaders["content-range"]) : nil
                written = range?.range?.lowerBound ?? 0
                total = range?.total ?? (response.expectedContentLength >= 0 ? response.expectedContentLength : nil)
                if isEncoded(response.lowercasedHeaders) { total = nil }
                hooks?.began(written, total)
            }
            if case .startOver = mode { return false }
            return true
        }
        func receive(_ bytes: UnsafeRawBufferPointer) throws {
            switch mode {
            case .writing:
                try part.write(bytes)
                written += Int64(bytes.count)
                hooks?.received(bytes.count)
                if let total {
                    guard written <= total else {
                        throw DownloadError(
                            kind: .inconsistentResponse("more bytes than the announced \(total)"),
                            path: destination.path)
                    }
                    // At most a thousand reports a download: each one costs more than a write.
                    let permille = total > 0 ? written * 1000 / total : 0
                    if permille != reported {
                        reported = permille
                        controller.report(progress: Double(written) / Double(total))
                    }
                }
            case .errorBody(var body):
                if body.count < HTTPStatusError.excerptLimit {
                    body.append(contentsOf: bytes.prefix(HTTPStatusError.excerptLimit - body.count))
                    mode = .errorBody(body)
                }
            case .waiting, .startOver, .alreadyComplete:
                break
            }
        }
        handler.onBytes = receive
        handler.onData = { data in try data.withUnsafeBytes { try receive($0) } }
        handler.onComplete = { [self] response, error in
            if controller.isCancelled { return part.close() }
            switch mode {
            case .startOver:
                do {
                    try part.truncate()
                    metadata = nil
                    // Not on the delegate queue, which every transfer of the client shares.
                    return controller.queue.async { self.attempt(resumingAt: nil) }
                } catch {
                    return end(.failure(error))
                }
            case .errorBody(let body) where error == nil:
                return end(HTTPReply.validated(body, response, nil, url: url).map { _ in destination })
            default:
                break
            }
            if let error { return end(.failure(TransportError.readable(error, url: url))) }
            if case .waiting = mode {
                // No HTTP response at all (a URL of another scheme): nothing to finalize.
                return end(.failure(TransportError(URLError(.badServerResponse), url: url)))
            }
            if case .writing = mode, let total, written != total {
                return end(
                    .failure(
                        DownloadError(
                            kind: .inconsistentResponse("got \(written) of \(total) bytes"), path: destination.path)))
            }
            // A hook's checksum or an fsync takes milliseconds: off the delegate queue, which every
            // transfer of the client shares.
            controller.queue.async { self.finalize() }
        }
        transport.start(request, handler: handler, for: controller)
    }

    /// What to do with `response`, for an attempt that asked from `offset` (nil: from the start).
    private func decide(_ response: HTTPURLResponse, resumingAt offset: Int64?) throws -> Mode {
        let headers = response.lowercasedHeaders
        let range = ContentRange(headers["content-range"])
        // The announced length is read here, not through Foundation (which takes one past `Int64.max`
        // for "unknown"): a number that is not one, or beyond what a download accepts, is a lie.
        if (200..<300).contains(response.statusCode), let text = headers["content-length"] {
            let digits = text.trimmingCharacters(in: .whitespaces)
            guard let length = Int64(digits), (0...DownloadLimits.maximumLength).contains(length) else {
                throw DownloadError(
                    kind: .inconsistentResponse(
                        "a Content-Length of '\(digits.prefix(40))', not a length from 0 to the "
                            + "\(DownloadLimits.maximumLength) bytes a download accepts"),
                    path: destination.path)
            }
        }
        switch response.statusCode {
        case 200..<300 where response.statusCode != 206:
            // A whole body that says it is a part of one: a server that ignored `Range` (or lies).
            // Neither writing it as the whole file nor splicing it is right; the `.part` stays.
            if let header = headers["content-range"], range?.range?.lowerBound != 0 {
                throw DownloadError(
                    kind: .inconsistentResponse("a \(response.statusCode) with Content-Range \(header)"),
                    path: destination.path)
            }
            if offset != nil { try part.truncate() }
            try remember(headers, total: response.expectedContentLength >= 0 ? response.expectedContentLength : nil)
            return .writing
        case 206:
            guard let offset else {
                // A range nobody asked for: usable only from the first byte.
                guard range?.range?.lowerBound == 0, let total = range?.total else {
                    throw DownloadError(
                        kind: .inconsistentResponse("a 206 without a Content-Range from byte 0"), path: destination.path
                    )
                }
                try remember(headers, total: total)
                return .writing
            }
            let sameResource =
                range?.range?.lowerBound == offset && range?.total != nil
                && (metadata?.total == nil || metadata?.total == range?.total)
                && carriesTheValidator(headers) && !isEncoded(headers)
            guard sameResource else { return .startOver }
            try part.seek(to: offset)
            return .writing
        case 416:
            guard let offset else { return .errorBody(Data()) }
            // A Content-Range that does not parse says nothing that proves the `.part` complete.
            let complete =
                metadata?.total == offset && (headers["content-range"] == nil || range?.total == offset)
                && metadata?.validator != nil
            return complete ? .alreadyComplete : .startOver
        default:
            return .errorBody(Data())
        }
    }

    /// Whether a 206 names the version the `.part` holds: it must carry the validator that
    /// `If-Range` sent (the ETag, or the Last-Modified date when there is no strong ETag). A server
    /// that ignores `If-Range` answers a changed file with a range of its new version, and a
    /// missing or different validator is the only sign of it.
    private func carriesTheValidator(_ headers: [String: String]) -> Bool {
        guard let validator = metadata?.validator else { return true }  // a blind resume: nothing to compare
        if validator == metadata?.etag { return headers["etag"] == validator }
        return headers["last-modified"] == validator
    }

    /// Whether the body is content-coded (gzip, say) despite `Accept-Encoding: identity`: the
    /// transport decodes it, so its length and ranges are not the bytes written.
    private func isEncoded(_ headers: [String: String]) -> Bool {
        guard let coding = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased() else {
            return false
        }
        return !coding.isEmpty && coding != "identity"
    }

    /// Writes the metadata of the response that starts the `.part`. A content-coded body keeps no
    /// validator or total: what was written is decoded, so it can be neither measured against the
    /// announced length nor resumed by a range.
    private func remember(_ headers: [String: String], total: Int64?) throws {
        let encoded = isEncoded(headers)
        let metadata = PartMetadata(
            url: url.absoluteString, etag: encoded ? nil : headers["etag"],
            lastModified: encoded ? nil : headers["last-modified"], total: encoded ? nil : total)
        try part.writeMetadata(metadata)
        self.metadata = metadata
    }

    /// Gives the complete `.part` the destination's name and completes the run, in one step on the
    /// run's queue. The rename happens only if the run is not cancelled by then — checked under the
    /// part's lock, which the cancel handler's `close()` takes too — and the run completes right
    /// after it, with no hop through a queue: a cancel comes first (no file under the name; the run
    /// ends cancelled) or finds the run finished. Only a cancel that lands between the check and
    /// `finish` (the rename call, the folder's flush with `.system`, closing the `.part`) ends the
    /// run cancelled with its file in place: closing that needs the core to let a body commit (a
    /// cancel after it too late), which its contract — a cancel ends the run at once — does not.
    private func finalize() {
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

    /// Ends the download: closes the `.part` and completes the run on its queue.
    private func end(_ result: Result<URL, any Error>) {
        part.close()
        controller.completeOnQueue(with: result)
    }
}
