import Foundation
import JobKit

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One run of an item in the simulation, between the manager's start and its end, doing what
/// `Download` does: it opens the `.part`, and each attempt requests, receives and writes as the real
/// `DownloadAttemptStateMachine` decides, until the `.part` is complete (`finalizing`, which the
/// manager carries out: it needs the journal) or the run ends.
struct SimulatedRun {
    typealias Machine = DownloadManagerStateMachine<UInt64>

    enum Step {
        /// The body has not opened the `.part` yet.
        case opening
        /// The request is out.
        case requested(DownloadAttemptStateMachine)
        /// The body arrives: what is left of it, and where the next piece is written.
        case receiving(DownloadAttemptStateMachine, SimulatedServer.Response, rest: [UInt8], writeAt: Int64)
        /// The `.part` is complete: the checksum, the `finishing` record and the rename are next.
        case finalizing
        /// The run is over; the manager hears how.
        case ended(Machine.Outcome)
    }

    /// What the manager's state machine hears of a step.
    enum Event {
        case began(offset: Int64, total: Int64?)
        case received(Int)
    }

    let start: Machine.Start
    private(set) var step = Step.opening
    var cancelled = false
    /// Whether the run has its `.part` open (claimed), to close when it ends.
    private(set) var holdsPart = false
    /// The answer the `.part` was last written from, when it wrote (for the invariants).
    private(set) var answer: SimulatedServer.Response?
    /// A rule this run saw broken (an honest answer refused, a lie that completed).
    private(set) var broken: String?

    init(start: Start, ended outcome: Machine.Outcome? = nil) {
        self.start = start
        if let outcome { step = .ended(outcome) }
    }

    typealias Start = Machine.Start

    var isEnded: Bool {
        if case .ended = step { return true }
        return false
    }

    var isFinalizing: Bool {
        if case .finalizing = step { return true }
        return false
    }

    /// Ends the run: its `.part` is closed first (`Download.end`, `Download.finalize`).
    mutating func end(_ outcome: Machine.Outcome, disk: inout SimulatedDisk) {
        if holdsPart { disk.release(PartNames(for: start.name).part) }
        holdsPart = false
        step = .ended(outcome)
    }

    private mutating func fail(_ error: any Error, disk: inout SimulatedDisk) {
        end(.failed(DownloadManager.ItemError(error)), disk: &disk)
    }

    /// One step of the body or its transport.
    mutating func advance(
        disk: inout SimulatedDisk, server: SimulatedServer, random: inout SimulationRandom, log: inout [String]
    ) -> Event? {
        let parts = PartNames(for: start.name)
        switch step {
        case .opening:
            do {
                try disk.openPart(parts.part)
                holdsPart = true
                let metadata = disk.readMetadata(parts.metadata)
                let length = Int64(disk.bytes(parts.part)?.count ?? 0)
                let offset = DownloadAttemptStateMachine.resumeOffset(
                    partLength: length, metadata: metadata, url: start.url, item: start.id.rawValue,
                    blindResume: false)
                if offset == nil { try disk.truncate(parts.part) }
                step = .requested(
                    DownloadAttemptStateMachine(
                        url: start.url, path: start.name, resumingAt: offset, metadata: metadata,
                        item: start.id.rawValue))
            } catch {
                fail(error, disk: &disk)
            }
        case .requested(var attempt):
            let response = server.respond(
                to: start.url.absoluteString, headers: attempt.requestHeaders, random: &random)
            log.append("  run \(start.generation) \(start.name): \(response.note)")
            do {
                switch try attempt.received(status: response.status, headers: response.headers) {
                case .write(let offset, let total, let truncating, let metadata):
                    if truncating { try disk.truncate(parts.part) }
                    if let metadata { try disk.writeMetadata(parts.metadata, metadata) }
                    answer = response
                    step = .receiving(attempt, response, rest: response.body, writeAt: truncating ? 0 : offset)
                    return .began(offset: offset, total: total)
                case .startOver:
                    try disk.truncate(parts.part)
                    disk.unlink(parts.metadata)
                    step = .requested(
                        DownloadAttemptStateMachine(url: start.url, path: start.name, resumingAt: nil, metadata: nil))
                case .readErrorBody, .finalizeWhenDone:
                    step = .receiving(attempt, response, rest: response.body, writeAt: 0)
                }
            } catch {
                if response.lie == nil, case .inconsistentResponse = error.kind {
                    broken = "an honest answer (\(response.note)) was refused: \(error)"
                }
                fail(error, disk: &disk)
            }
        case .receiving(var attempt, let response, let rest, let writeAt):
            let dropsNow = response.drops && (rest.isEmpty || random.chance(30))
            if rest.isEmpty || dropsNow {
                ended(attempt.ended(withError: dropsNow), response, disk: &disk)
                return nil
            }
            let piece = Array(rest.prefix(random.int(1...max(1, rest.count))))
            do {
                let action = try piece.withUnsafeBytes { try attempt.received($0) }
                var at = writeAt
                var event: Event?
                if case .write = action {
                    try disk.write(parts.part, at: writeAt, piece)
                    at += Int64(piece.count)
                    event = .received(piece.count)
                }
                step = .receiving(attempt, response, rest: Array(rest.dropFirst(piece.count)), writeAt: at)
                return event
            } catch {
                if response.lie == nil, case .inconsistentResponse? = (error as? DownloadError)?.kind {
                    broken = "an honest body (\(response.note)) was refused: \(error)"
                }
                fail(error, disk: &disk)
            }
        case .finalizing, .ended:
            break
        }
        return nil
    }

    /// The transfer ended: what the attempt machine calls for.
    private mutating func ended(
        _ action: DownloadAttemptStateMachine.EndAction, _ response: SimulatedServer.Response,
        disk: inout SimulatedDisk
    ) {
        switch action {
        case .startOver:
            do {
                try disk.truncate(PartNames(for: start.name).part)
                step = .requested(
                    DownloadAttemptStateMachine(url: start.url, path: start.name, resumingAt: nil, metadata: nil))
            } catch {
                fail(error, disk: &disk)
            }
        case .failWithStatus(let body):
            let head = HTTPURLResponse(
                url: start.url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: [:])!
            fail(HTTPStatusError(HTTPReply(head, body: Data(body))), disk: &disk)
        case .failWithTransportError, .failWithoutResponse:
            fail(TransportError(URLError(.networkConnectionLost), url: start.url), disk: &disk)
        case .fail(let error):
            if response.lie == nil, !response.drops {
                broken = "an honest answer (\(response.note)) failed: \(error)"
            }
            fail(error, disk: &disk)
        case .finalize:
            if let lie = answer?.lie, lie.hasPrefix("Content-Length") {
                broken = "a body whose \(lie) completed the item"
            }
            step = .finalizing
        }
    }
}
