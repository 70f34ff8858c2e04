import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `jobkit publish` does: uploads every file (at most `maxConcurrent` at once, each retried on transient
/// failures), then creates the post only if every upload succeeded — once, however often its request is sent.
///
/// Runs on the main actor (the main queue, which `jobkit` services), where the `JobQueue` of the uploads
/// delivers its states and the display is drawn.
@MainActor
final class Publisher {
    /// A post the server created.
    struct CreatedPost: Decodable, Sendable, Equatable {
        var id: Int
        var text: String
        var mediaIDs: [String]
    }

    /// How a run ended.
    enum Outcome: Sendable {
        case published(CreatedPost)
        /// Some uploads failed (name, why): no post was created.
        case uploadsFailed([(name: String, reason: String)])
        /// Every upload succeeded but the post was not made: the server refused it (a 4xx answer), or no
        /// request reached it (the connection was refused).
        case postFailed(String)
        /// Every upload succeeded, and the post request failed in a way that cannot tell whether the server
        /// made the post: its answer was lost, timed out, was a 5xx or was not a post (junk, no `id`). A rerun
        /// with the same `idempotencyKey` finishes it without posting twice.
        case postUnknown(String)
        /// Stopped by `interrupt()`: what the check after it found (nothing to check before the post request).
        case interrupted(PostCheck)
    }

    /// Whether the server has this run's post, as a check after Ctrl-C found it.
    enum PostCheck: Sendable {
        case created(CreatedPost)
        /// Proven: the post request never started, or the server's list of posts does not have it.
        case notCreated
        /// The check failed or did not answer in time (why): the post may have been created.
        case unknown(String)
    }

    /// How long the check after Ctrl-C waits for the server's list of posts before saying it cannot tell.
    static let checkTimeout: Duration = .seconds(5)

    let server: URL
    let text: String
    let files: [URL]
    let maxConcurrent: Int
    let retries: Int
    let client: TransferClient
    let run: String
    /// The `Idempotency-Key` of this run's post: every attempt at the post sends it, so the server makes the post
    /// once and answers a repeat with that post.
    let idempotencyKey: String
    private let display: TransferDisplay
    private var speeds: [Int: SpeedMeter] = [:]
    /// The uploads' queue, kept while they run.
    private var uploads: JobQueue<Int>?
    private var postTask: Task<CreatedPost, any Error>?
    private(set) var isInterrupted = false

    /// A publisher of `text` with `files` to `server`. The media names' run id comes from `idempotencyKey`
    /// (`PublishMedia.run(for:)`), so a rerun with the same key uploads to the same names and sends the same
    /// post: the server answers it with the post the key made, if it made one.
    init(
        server: URL, text: String, files: [URL], maxConcurrent: Int, retries: Int, display: TransferDisplay,
        client: TransferClient, idempotencyKey: String = UUID().uuidString
    ) {
        self.server = server
        self.text = text
        self.files = files
        self.maxConcurrent = maxConcurrent
        self.retries = retries
        self.display = display
        self.client = client
        self.run = PublishMedia.run(for: idempotencyKey)
        self.idempotencyKey = idempotencyKey
    }

    /// The media ids of this run's files, in order.
    nonisolated var mediaIDs: [String] {
        files.enumerated().map { PublishMedia.name(for: $1.lastPathComponent, index: $0, run: run) }
    }

    /// Uploads, then posts; call it from the main queue.
    func publish() async -> Outcome {
        let failures = await uploadAll()
        if isInterrupted { return .interrupted(.notCreated) }
        guard failures.isEmpty else { return .uploadsFailed(failures) }
        display.message("creating the post")
        let reachedServer = LockedBox<Bool>.make(false)
        let task = Task { try await createPost(reachedServer: reachedServer) }
        postTask = task
        do {
            return .published(try await task.value)
        } catch {
            if isInterrupted { return .interrupted(await check()) }
            let reason = CommandLineError.describe(error)
            // Not made only when every attempt was refused before the server could act on it.
            let maybe = reachedServer.withLock { $0 } || !Self.provesNotCreated(error)
            return maybe ? .postUnknown(reason) : .postFailed(reason)
        }
    }

    /// Whether a failed post request proves that the server did not make the post: a 4xx answer (not 409,
    /// which the idempotency draft gives a key whose first request is still running), or a connection that
    /// was never made. Anything else — a lost or timed-out answer, a 5xx, an answer that is not a post —
    /// cannot tell.
    nonisolated static func provesNotCreated(_ error: any Error) -> Bool {
        if let status = error as? HTTPStatusError { return (400...499).contains(status.status) && status.status != 409 }
        let code: URLError.Code? = (error as? TransportError)?.code ?? (error as? URLError)?.code
        guard let code else { return false }
        return [.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .badURL, .unsupportedURL].contains(code)
    }

    /// After Ctrl-C stopped the post request: whether the server has the post, asked with a deadline of
    /// `checkTimeout` — a check that fails or stalls cannot tell.
    private func check() async -> PostCheck {
        let timeout = Self.checkTimeout
        let job = Job<CreatedPost?>(operation: { [self] in try await existingPost() }).timeout(timeout)
        do {
            return try await job.value.map(PostCheck.created) ?? .notCreated
        } catch JobError.timedOut {
            return .unknown("the server did not answer the check within \(timeout.components.seconds) s")
        } catch {
            return .unknown(CommandLineError.describe(error))
        }
    }

    /// Stops at once. Before the post request starts there is nothing to save and nothing to
    /// cancel: returns true, and the caller exits — running uploads end with the process (the post
    /// is only ever requested after every upload succeeded in this process). Cancelling them
    /// instead could trap FoundationNetworking (swift-corelibs, Swift 6.3: `EasyHandle.swift`
    /// "libcurl.Easy Code=43", and the registry trap of `RunningTransfer.cancel`), seen in CI. Once
    /// the post request has started it is cancelled, and `publish()` says whether the post exists.
    func interrupt() -> Bool {
        isInterrupted = true
        guard let postTask else { return true }
        postTask.cancel()
        return false
    }

    // MARK: - Uploads

    private func uploadAll() async -> [(name: String, reason: String)] {
        let names = mediaIDs
        let snapshots = files.map { PublishMedia.snapshot(of: $0) }
        let sizes = snapshots.map { $0?.size }
        var failures: [Int: String] = [:]
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = JobQueue<Int>(maxConcurrent: maxConcurrent) { [self] id, state in
                show(id, state, size: sizes[id])  // on the main actor
            } onAllFinished: {
                continuation.resume()
            }
            uploads = queue
            for (index, file) in files.enumerated() {
                display.update(TransferRow(id: index, name: file.lastPathComponent, totalBytes: sizes[index]))
                let url = server.appendingPathComponent("media").appendingPathComponent(names[index])
                // A file that changed while it was sent fails: what the server got is not the file.
                let snapshot = snapshots[index]
                let upload = Job<HTTPReply>.upload(file: file, to: url, client: client).map { reply in
                    if let snapshot { try PublishMedia.checkUnchanged(file, since: snapshot) }
                    return reply
                }
                let job = retried(upload, id: index)
                try? queue.add(job, id: index) { [self] result in  // ids are unique: indexes; on the main actor
                    guard case .failure(let error) = result, !isInterrupted else { return }
                    let reason = CommandLineError.describe(error)
                    failures[index] = reason
                    var row = display.rows.row(id: index) ?? TransferRow(id: index, name: file.lastPathComponent)
                    row.status = .failed(reason: reason)
                    display.update(row)
                }
            }
            if files.isEmpty { continuation.resume() }
        }
        uploads = nil
        return failures.sorted { $0.key < $1.key }.map { (files[$0.key].lastPathComponent, $0.value) }
    }

    /// `job`, retried `retries` times on transient failures, each retry shown on the row of `id`.
    private func retried<Value>(_ job: Job<Value>, id: Int) -> Job<Value> {
        let attempts = LockedBoxCounter()
        let display = self.display
        return job.retry(
            retries + 1, backoff: .exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2)
        ) { error in
            guard Self.isWorthRetrying(error) else { return false }
            let attempt = attempts.increment() + 1
            let reason = CommandLineError.describe(error)
            DispatchQueue.main.async {
                guard var row = display.rows.row(id: id), !row.status.isFinal else { return }
                row.status = .retrying(attempt: attempt, reason: reason)
                row.bytesPerSecond = 0
                row.secondsRemaining = nil
                display.update(row)
            }
            return true
        }
    }

    /// Transient, and not asking to wait more than a minute.
    nonisolated static func isWorthRetrying(_ error: any Error) -> Bool {
        if let status = error as? HTTPStatusError, let wait = status.retryAfter, wait > .seconds(60) { return false }
        return TransientFailure.isTransient(error)
    }

    private func show(_ id: Int, _ state: JobState, size: Int64?) {
        guard var row = display.rows.row(id: id) else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        switch state {
        case .pending:
            row.status = .queued
        case .running(let fraction):
            let done = size.map { Int64(Double($0) * min(max(fraction, 0), 1)) } ?? 0
            var meter = speeds[id] ?? SpeedMeter(window: 2_000_000_000)
            meter.record(done, at: now)
            speeds[id] = meter
            row.bytesDone = done
            row.bytesPerSecond = meter.rate(done, at: now)
            row.secondsRemaining = meter.secondsRemaining(done, of: size, at: now)
            // A retry shows until its attempt moves bytes again.
            let isRetrying = if case .retrying = row.status { true } else { false }
            if !isRetrying || fraction > 0 { row.status = .running }
        case .finished:
            row.bytesDone = size ?? row.bytesDone
            row.status = .completed
            speeds[id] = nil
        case .cancelled:
            row.status = .cancelled
            speeds[id] = nil
        case .failed:
            speeds[id] = nil
            return  // the result handler, which has the error, shows it
        }
        display.update(row)
    }

    // MARK: - The post

    /// The request that creates the post, the same for every attempt: its `Idempotency-Key` is the run's, as a
    /// Structured Field string (quoted), the form `draft-ietf-httpapi-idempotency-key-header` gives.
    private var postRequest: URLRequest {
        var request = URLRequest(url: server.appendingPathComponent("posts"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("\"\(idempotencyKey)\"", forHTTPHeaderField: "Idempotency-Key")
        request.httpBody = try? JSONEncoder().encode(NewPostBody(text: text, mediaIDs: mediaIDs))
        return request
    }

    /// Creates the post, retrying transient failures. Every attempt carries the run's `Idempotency-Key`, and
    /// the server answers a key it has seen with the post that key made: when an answer is lost after the
    /// server stored the post, the retry gets that post, so a retry never posts twice. (Asking first whether
    /// the post exists would add nothing the key does not give, and a check that fails could not tell.)
    ///
    /// `reachedServer` is set when an attempt failed in a way that leaves open whether the server made the post.
    private func createPost(reachedServer: LockedBox<Bool>) async throws -> CreatedPost {
        var attempt = 1
        while true {
            do {
                return try await Job<CreatedPost>.decode(for: postRequest, client: client).value
            } catch {
                if !Self.provesNotCreated(error) { reachedServer.withLock { $0 = true } }
                guard Self.isWorthRetrying(error), attempt <= retries, !Task.isCancelled else { throw error }
                attempt += 1
                display.message("retrying the post (attempt \(attempt)): \(CommandLineError.describe(error))")
                let wait = Backoff.exponential(initial: .milliseconds(200), maximum: .seconds(5), jitter: 0.2)
                    .delay(beforeRetry: attempt - 1)
                try await Task.sleep(for: wait)
            }
        }
    }

    /// This run's post, if the server has it: its media ids are unique to the run. (Only to tell, after Ctrl-C
    /// stopped the post request, whether the post was made.)
    nonisolated func existingPost() async throws -> CreatedPost? {
        let posts = try await Job<[CreatedPost]>.decode(
            for: URLRequest(url: server.appendingPathComponent("posts")), client: client
        ).value
        let ids = mediaIDs
        return posts.last { $0.mediaIDs == ids && $0.text == text }
    }
}

/// The JSON body of `POST /posts`.
private struct NewPostBody: Encodable {
    var text: String
    var mediaIDs: [String]
}
