import Foundation
import Hummingbird
import JobKit
import NIOCore

/// Faults the server injects, so that clients' retries and timeouts can be shown and tested.
///
/// Per server: a latency range, a failure rate with its status (and `Retry-After`), a rate of dropped
/// connections, and a script of the next N requests to fail. Per request: the headers
/// `X-Fault-Latency-Ms: 0…60000`, `X-Fault-Status: 200…599` and `X-Fault-Drop: 0|1`; any other value of
/// one of them is answered with 400 and a message naming the header.
///
/// Out-of-range values given through this API never trap: latencies are clamped to
/// `0...maximumLatencyMilliseconds`, a status outside `statusRange` is replaced by 500, rates are clamped
/// to 0...1 and a negative `retryAfterSeconds` is not sent.
public struct FaultPlan: Sendable, Equatable {
    /// The longest latency, in milliseconds, that a plan or `X-Fault-Latency-Ms` may ask for: one minute.
    public static let maximumLatencyMilliseconds = 60_000
    /// The statuses a fault may answer with: final statuses only (a 1xx is not an answer).
    public static let statusRange = 200...599

    /// Every response waits a random time in this range, in milliseconds.
    public var latencyMilliseconds: ClosedRange<Int> = 0...0
    /// The share of requests (0...1) answered with `failureStatus` instead.
    public var failureRate: Double = 0
    /// The status of injected failures (503 unless told otherwise); outside `statusRange` it becomes 500.
    public var failureStatus: Int = 503
    /// `Retry-After` (seconds) sent with injected failures.
    public var retryAfterSeconds: Int?
    /// The share of requests (0...1) whose connection is dropped mid-response.
    public var dropRate: Double = 0

    /// A plan; the defaults inject nothing. Out-of-range values are sanitized as the type describes,
    /// never trapped on.
    public init(
        latencyMilliseconds: ClosedRange<Int> = 0...0, failureRate: Double = 0, failureStatus: Int = 503,
        retryAfterSeconds: Int? = nil, dropRate: Double = 0
    ) {
        self.latencyMilliseconds = latencyMilliseconds
        self.failureRate = failureRate
        self.failureStatus = failureStatus
        self.retryAfterSeconds = retryAfterSeconds
        self.dropRate = dropRate
    }

    /// A latency drawn from the plan's range, clamped to `0...maximumLatencyMilliseconds`.
    func drawLatency() -> Int {
        let maximum = Self.maximumLatencyMilliseconds
        let low = min(max(latencyMilliseconds.lowerBound, 0), maximum)
        let high = min(max(latencyMilliseconds.upperBound, low), maximum)
        return Int.random(in: low...high)
    }

    /// `status` if it is in `statusRange`, else 500.
    static func sanitized(status: Int) -> Int {
        statusRange.contains(status) ? status : 500
    }

    /// Whether an event of probability `rate` (NaN and negatives never, above 1 always) happens now.
    static func happens(rate: Double) -> Bool {
        guard rate > 0 else { return false }
        return rate >= 1 || Double.random(in: 0..<1) < rate
    }
}

/// The server's live fault settings; change them while it runs.
public final class FaultController: Sendable {
    /// One `failNext` call: `remaining` more requests fail with `status`.
    private struct ScriptedRun: Sendable {
        var status: Int
        var retryAfterSeconds: Int?
        var remaining: Int
    }

    private struct State: Sendable {
        var plan: FaultPlan
        var scripted: [ScriptedRun] = []

        /// Takes one scripted failure, if any is left.
        mutating func takeScripted() -> ScriptedRun? {
            guard var first = scripted.first else { return nil }
            first.remaining -= 1
            if first.remaining == 0 { scripted.removeFirst() } else { scripted[0] = first }
            return first
        }
    }

    private let state: LockedBox<State>

    init(plan: FaultPlan) {
        state = .make(State(plan: plan))
    }

    /// The standing plan.
    public var plan: FaultPlan {
        get { state.withLock { $0.plan } }
        set { state.withLock { $0.plan = newValue } }
    }

    /// Fails the next `count` requests with `status` (and `Retry-After`, if given), whatever the plan says.
    ///
    /// A `count` of 0 or less does nothing; a `status` outside `FaultPlan.statusRange` is replaced by 500.
    /// Each call keeps one entry, whatever its count.
    public func failNext(_ count: Int, status: Int = 503, retryAfterSeconds: Int? = nil) {
        guard count > 0 else { return }
        let run = ScriptedRun(
            status: FaultPlan.sanitized(status: status), retryAfterSeconds: retryAfterSeconds, remaining: count)
        state.withLock { $0.scripted.append(run) }
    }

    enum Decision: Equatable {
        case pass
        case fail(status: Int, retryAfterSeconds: Int?)
        case drop
        /// A fault header is invalid: answer 400 with this message.
        case reject(String)
    }

    static let latencyHeader = HTTPFields.Element.Name("X-Fault-Latency-Ms")!
    static let statusHeader = HTTPFields.Element.Name("X-Fault-Status")!
    static let dropHeader = HTTPFields.Element.Name("X-Fault-Drop")!

    /// The per-request fault headers, validated.
    struct RequestFaults: Equatable {
        var latency: Int?
        var status: Int?
        var drop = false

        /// Parses the fault headers of `headers`; the message names the bad header and its valid values.
        static func parse(_ headers: HTTPFields) -> Result<RequestFaults, FaultHeaderError> {
            var faults = RequestFaults()
            if let value = headers[FaultController.latencyHeader] {
                let maximum = FaultPlan.maximumLatencyMilliseconds
                guard let latency = Int(value.trimmingSpaces()), (0...maximum).contains(latency) else {
                    return .failure(.init(header: "X-Fault-Latency-Ms", expected: "0…\(maximum)", value: value))
                }
                faults.latency = latency
            }
            if let value = headers[FaultController.statusHeader] {
                guard let status = Int(value.trimmingSpaces()), FaultPlan.statusRange.contains(status) else {
                    let range = FaultPlan.statusRange
                    return .failure(
                        .init(
                            header: "X-Fault-Status", expected: "\(range.lowerBound)…\(range.upperBound)", value: value)
                    )
                }
                faults.status = status
            }
            if let value = headers[FaultController.dropHeader] {
                switch value.trimmingSpaces() {
                case "1": faults.drop = true
                case "0": faults.drop = false
                default: return .failure(.init(header: "X-Fault-Drop", expected: "0 or 1", value: value))
                }
            }
            return .success(faults)
        }
    }

    /// A fault header with a value outside its range.
    struct FaultHeaderError: Error, Equatable {
        var header: String
        var expected: String
        var value: String

        var message: String {
            let shown = value.count > 40 ? value.prefix(40) + "…" : Substring(value)
            return "\(header) must be \(expected), got '\(shown)'"
        }
    }

    /// Decides what happens to one request, and how long it waits first.
    func decide(for request: Request) -> (latency: Int, decision: Decision) {
        let faults: RequestFaults
        switch RequestFaults.parse(request.headers) {
        case .failure(let error): return (0, .reject(error.message))
        case .success(let parsed): faults = parsed
        }
        let (plan, scripted) = state.withLock { ($0.plan, $0.takeScripted()) }
        let latency = faults.latency ?? plan.drawLatency()
        let retryAfter = plan.retryAfterSeconds.flatMap { $0 >= 0 ? $0 : nil }
        if faults.drop { return (latency, .drop) }
        if let status = faults.status { return (latency, .fail(status: status, retryAfterSeconds: retryAfter)) }
        if let scripted {
            let scriptedRetryAfter = scripted.retryAfterSeconds.flatMap { $0 >= 0 ? $0 : nil }
            return (latency, .fail(status: scripted.status, retryAfterSeconds: scriptedRetryAfter))
        }
        if FaultPlan.happens(rate: plan.dropRate) { return (latency, .drop) }
        if FaultPlan.happens(rate: plan.failureRate) {
            return (
                latency, .fail(status: FaultPlan.sanitized(status: plan.failureStatus), retryAfterSeconds: retryAfter)
            )
        }
        return (latency, .pass)
    }
}

/// Applies a `FaultController`'s decisions before the routes see a request.
struct FaultMiddleware<Context: RequestContext>: RouterMiddleware {
    let faults: FaultController

    struct DroppedConnection: Error {}

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let (latency, decision) = faults.decide(for: request)
        if latency > 0 { try await Task.sleep(for: .milliseconds(latency)) }
        switch decision {
        case .pass:
            return try await next(request, context)
        case .reject(let message):
            return Response.error(.badRequest, message)
        case .fail(let status, let retryAfter):
            var response = Response.error(.init(code: status), "injected failure")
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        case .drop:
            // Promise more bytes than are sent, then fail the body: the connection closes mid-response.
            return Response(
                status: .ok, headers: [.contentLength: "1000"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "partial"))
                    throw DroppedConnection()
                })
        }
    }
}
