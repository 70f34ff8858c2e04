import Foundation

/// One attempt of a download as a value: the request it makes, what the response means for the
/// `.part`, what each piece of the body and the end of the transfer call for.
///
/// Pure: it never touches the `.part`, a socket or a clock. Each transition returns what to do, and
/// `Download` (the executor) does it: truncate, seek, write the metadata, write the bytes, ask again
/// from the start, fail, or finalize. Its rules:
/// - a resume sends `Range` and, when the `.part` has one, its validator in `If-Range`; a
///   `Last-Modified` counts as one only when strong (at least a second before the response's
///   `Date`, RFC 9110 §8.8.2.2), so a `.part` known by a weak date alone is started over;
/// - a 206 continues the `.part` only if it starts at the offset asked for, names a total that agrees
///   with the `.part`'s, carries the validator sent and is not content-coded; anything else starts
///   over (a server that ignored `If-Range`, or a file that changed);
/// - a whole 2xx body replaces the `.part`, unless it claims to be a part of one (`Content-Range`
///   not from byte 0): that is inconsistent, and the `.part` stays;
/// - a 416 proves the `.part` complete only with its total equal to the offset, a validator, and no
///   `Content-Range` that says otherwise; else it starts over;
/// - a `Content-Length` that is not a length from 0 to `DownloadLimits.maximumLength`, more bytes
///   than announced, or fewer at the end fail the attempt as inconsistent;
/// - any other status reads at most `HTTPStatusError.excerptLimit` bytes of its body for the error.
struct DownloadAttemptStateMachine {
    /// Where the attempt is.
    enum State: Equatable {
        /// The request is out; no response yet.
        case requested
        /// The body fills the `.part`: `written` is its length so far, `total` the length it must
        /// reach (nil when unknown).
        case writing(written: Int64, total: Int64?, reportedPermille: Int64)
        /// A status that is an error: the start of its body, for the message.
        case readingErrorBody(Data)
        /// The response does not continue the `.part`: stop the transfer, ask again from byte 0.
        case startingOver
        /// A 416 proved the `.part` complete: nothing to write, finalize.
        case alreadyComplete
    }

    /// What to do with a response.
    enum ResponseAction: Equatable {
        /// Write the body into the `.part`, which starts at `offset` (0, or where a resume
        /// continues): first truncate it (`truncating`) or move to `offset` (a resume), and keep
        /// `metadata` beside it when there is a new one. `total` is the length it must reach.
        case write(offset: Int64, total: Int64?, truncating: Bool, metadata: PartMetadata?)
        /// Read the body for the error message.
        case readErrorBody
        /// Stop the transfer: it does not continue the `.part`.
        case startOver
        /// Take no body: the `.part` is complete already.
        case finalizeWhenDone
    }

    /// What to do with a piece of the body.
    enum BodyAction: Equatable {
        /// Write the bytes into the `.part`; report `progress` (a fraction) when there is one.
        case write(progress: Double?)
        /// Nothing: the bytes are kept for an error message, or not wanted.
        case skip
    }

    /// What the end of the transfer calls for.
    enum EndAction: Equatable {
        /// Truncate the `.part`, forget its metadata, and make a new attempt from byte 0.
        case startOver
        /// Fail with the status of the response and this start of its body.
        case failWithStatus(body: Data)
        /// Fail with the transport's error.
        case failWithTransportError
        /// No HTTP response came at all (a URL of another scheme).
        case failWithoutResponse
        /// Fail: the server's answer did not add up.
        case fail(DownloadError)
        /// The `.part` is complete: give it the destination's name.
        case finalize
    }

    /// The URL asked for.
    let url: URL
    /// The destination's path, for error messages.
    let path: String
    /// Where the attempt resumes the `.part`; nil: from the start.
    let offset: Int64?
    /// The `.part`'s metadata when the attempt starts.
    let metadata: PartMetadata?
    /// The manager's item the `.part` belongs to, kept in its new metadata; nil for a plain download.
    let item: UInt64?
    private(set) var state = State.requested

    init(url: URL, path: String, resumingAt offset: Int64?, metadata: PartMetadata?, item: UInt64? = nil) {
        self.url = url
        self.path = path
        self.offset = offset
        self.metadata = metadata
        self.item = item
    }

    /// Where a new download may resume a `.part` of `length` bytes with `metadata` (nil: start over).
    /// A `.part` is resumed only with a validator (or blindly, when asked), and never past its known
    /// total; it must be the same download's: for the same URL or, for a manager's item (`item`), the
    /// same item, whatever URL it now has (the validator, sent in `If-Range` and checked on the
    /// answer, proves the new URL serves the same bytes).
    ///
    /// When the machine may have restarted since the `.part` was written (`restarted`: see
    /// `PartMetadata.isWrittenInBoot(_:)`), only its flushed length (`PartMetadata.synced`) is
    /// resumed — the executor cuts the `.part` to it — and a `.part` never flushed starts over:
    /// its length may cover bytes that read as zeros.
    static func resumeOffset(
        partLength length: Int64, metadata: PartMetadata?, url: URL, item: UInt64? = nil, blindResume: Bool,
        restarted: Bool = false
    ) -> Int64? {
        guard length > 0 else { return nil }
        guard let metadata else { return blindResume ? length : nil }
        // A segmented download's `.part` has holes: its length says nothing of what is written.
        guard metadata.segments == nil else { return nil }
        let same = metadata.url == url.absoluteString || (item != nil && metadata.item == item)
        guard same, metadata.validator != nil || blindResume else { return nil }
        if let total = metadata.total, length > total { return nil }
        guard restarted else { return length }
        guard let synced = metadata.synced, synced > 0, synced <= length else { return nil }
        return synced
    }

    /// The request's headers: the file as the server keeps it (ranges, lengths and checksums are of
    /// those bytes), and for a resume its range and validator.
    var requestHeaders: [String: String] {
        var headers = ["Accept-Encoding": "identity"]
        if let offset {
            headers["Range"] = "bytes=\(offset)-"
            if let validator = metadata?.validator { headers["If-Range"] = validator }
        }
        return headers
    }

    /// The response arrived, with its headers' names lowercased.
    mutating func received(status: Int, headers: [String: String]) throws(DownloadError) -> ResponseAction {
        let action = try decide(status: status, headers: headers)
        switch action {
        case .write(let offset, let total, _, _): state = .writing(written: offset, total: total, reportedPermille: -1)
        case .readErrorBody: state = .readingErrorBody(Data())
        case .startOver: state = .startingOver
        case .finalizeWhenDone: state = .alreadyComplete
        }
        return action
    }

    /// A piece of the body arrived.
    mutating func received(_ bytes: UnsafeRawBufferPointer) throws(DownloadError) -> BodyAction {
        switch state {
        case .writing(let written, let total, let reported):
            let now = written + Int64(bytes.count)
            guard let total else {
                state = .writing(written: now, total: nil, reportedPermille: reported)
                return .write(progress: nil)
            }
            guard now <= total else {
                throw DownloadError(kind: .inconsistentResponse("more bytes than the announced \(total)"), path: path)
            }
            // At most a thousand reports a download: each one costs more than a write.
            let permille = total > 0 ? now * 1000 / total : 0
            state = .writing(written: now, total: total, reportedPermille: permille)
            return .write(progress: permille == reported ? nil : Double(now) / Double(total))
        case .readingErrorBody(var body):
            if body.count < HTTPStatusError.excerptLimit {
                body.append(contentsOf: bytes.prefix(HTTPStatusError.excerptLimit - body.count))
                state = .readingErrorBody(body)
            }
            return .skip
        case .requested, .startingOver, .alreadyComplete:
            return .skip
        }
    }

    /// The transfer ended, with the transport's error if it failed.
    func ended(withError failed: Bool) -> EndAction {
        switch state {
        case .startingOver:
            return .startOver
        case .readingErrorBody(let body) where !failed:
            return .failWithStatus(body: body)
        default:
            break
        }
        if failed { return .failWithTransportError }
        switch state {
        case .requested:
            return .failWithoutResponse
        case .writing(let written, let total?, _) where written != total:
            return .fail(DownloadError(kind: .inconsistentResponse("got \(written) of \(total) bytes"), path: path))
        default:
            return .finalize
        }
    }

    // MARK: Deciding

    private func decide(status: Int, headers: [String: String]) throws(DownloadError) -> ResponseAction {
        let range = ContentRange(headers["content-range"])
        // The announced length is read here, as the server wrote it: a number that is not one, or
        // beyond what a download accepts, is a lie.
        var length: Int64?
        if (200..<300).contains(status), let text = headers["content-length"] {
            let digits = text.trimmingCharacters(in: .whitespaces)
            guard let value = Int64(digits), (0...DownloadLimits.maximumLength).contains(value) else {
                throw DownloadError(
                    kind: .inconsistentResponse(
                        "a Content-Length of '\(digits.prefix(40))', not a length from 0 to the "
                            + "\(DownloadLimits.maximumLength) bytes a download accepts"),
                    path: path)
            }
            length = value
        }
        let encoded = Self.isEncoded(headers)
        switch status {
        case 200..<300 where status != 206:
            // A whole body that says it is a part of one: a server that ignored `Range` (or lies).
            // Neither writing it as the whole file nor splicing it is right; the `.part` stays.
            if let header = headers["content-range"], range?.range?.lowerBound != 0 {
                throw DownloadError(kind: .inconsistentResponse("a \(status) with Content-Range \(header)"), path: path)
            }
            return .write(
                offset: 0, total: encoded ? nil : length, truncating: offset != nil,
                metadata: remembered(headers, total: length))
        case 206:
            guard let offset else {
                // A range nobody asked for: usable only from the first byte.
                guard range?.range?.lowerBound == 0, let total = range?.total else {
                    throw DownloadError(
                        kind: .inconsistentResponse("a 206 without a Content-Range from byte 0"), path: path)
                }
                return .write(
                    offset: 0, total: encoded ? nil : total, truncating: false,
                    metadata: remembered(headers, total: total))
            }
            let sameResource =
                range?.range?.lowerBound == offset && range?.total != nil
                && (metadata?.total == nil || metadata?.total == range?.total)
                && carriesTheValidator(headers) && !encoded
            guard sameResource else { return .startOver }
            return .write(offset: offset, total: range?.total, truncating: false, metadata: nil)
        case 416:
            guard let offset else { return .readErrorBody }
            // A Content-Range that does not parse says nothing that proves the `.part` complete.
            let complete =
                metadata?.total == offset && (headers["content-range"] == nil || range?.total == offset)
                && metadata?.validator != nil
            return complete ? .finalizeWhenDone : .startOver
        default:
            return .readErrorBody
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
    static func isEncoded(_ headers: [String: String]) -> Bool {
        guard let coding = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased() else {
            return false
        }
        return !coding.isEmpty && coding != "identity"
    }

    /// The metadata of a response that starts the `.part`. A content-coded body keeps no validator
    /// or total: what is written is decoded, so it can be neither measured against the announced
    /// length nor resumed by a range. A `Last-Modified` is kept only when it is a strong validator
    /// (`PartMetadata.strongLastModified`): with a weak one alone, the `.part` is never resumed.
    private func remembered(_ headers: [String: String], total: Int64?) -> PartMetadata {
        let encoded = Self.isEncoded(headers)
        return PartMetadata(
            url: url.absoluteString, item: item, etag: encoded ? nil : headers["etag"],
            lastModified: encoded ? nil : PartMetadata.strongLastModified(headers), total: encoded ? nil : total)
    }
}
