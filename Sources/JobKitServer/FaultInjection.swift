import Foundation
import Hummingbird
import JobKit
import NIOCore

/// Faults the server injects, so that clients' retries and timeouts can be shown and tested.
///
/// Per server: a latency range, a failure rate with its status (and `Retry-After`), a rate of dropped
/// connections, and a script of the next N requests (of a method and path, or any) to fail or to lose their
/// answer after the route handled them. Per request: the headers
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
    /// What a scripted request gets.
    private enum ScriptedFault: Sendable {
        case fail(status: Int, retryAfterSeconds: Int?)
        case dropAnswer
    }

    /// One `failNext` or `dropNextAnswers` call: `remaining` more requests that match get `fault`.
    private struct ScriptedRun: Sendable {
        var fault: ScriptedFault
        /// The method and path a request must have (nil: any).
        var method: String?
        var path: String?
        var remaining: Int

        func matches(method: String, path: String) -> Bool {
            (self.method.map { $0 == method } ?? true) && (self.path.map { $0 == path } ?? true)
        }
    }

    private struct State: Sendable {
        var plan: FaultPlan
        var scripted: [ScriptedRun] = []

        /// Takes one scripted fault for a request of `method` and `path`: the first run that matches it.
        mutating func takeScripted(method: String, path: String) -> ScriptedFault? {
            guard let index = scripted.firstIndex(where: { $0.matches(method: method, path: path) }) else {
                return nil
            }
            let fault = scripted[index].fault
            scripted[index].remaining -= 1
            if scripted[index].remaining == 0 { scripted.remove(at: index) }
            return fault
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

    /// Fails the next `count` requests with `status` (and `Retry-After`, if given), whatever the plan says —
    /// only those with `method` and `path` (`"GET"`, `"/posts"`: the path without its query) when given.
    ///
    /// A `count` of 0 or less does nothing; a `status` outside `FaultPlan.statusRange` is replaced by 500.
    /// Each call keeps one entry, whatever its count; a request takes from the oldest entry that matches it.
    public func failNext(
        _ count: Int, status: Int = 503, retryAfterSeconds: Int? = nil, method: String? = nil, path: String? = nil
    ) {
        let fault = ScriptedFault.fail(
            status: FaultPlan.sanitized(status: status), retryAfterSeconds: retryAfterSeconds)
        script(fault, count: count, method: method, path: path)
    }

    /// Loses the answers to the next `count` requests — only those with `method` and `path` when given: each
    /// reaches its route, which does its work (stores the post, say), and then the connection closes in the
    /// middle of the answer, so the client cannot tell whether the work was done.
    ///
    /// A `count` of 0 or less does nothing. Each call keeps one entry, whatever its count; a request takes
    /// from the oldest entry (of this method or of `failNext`) that matches it.
    public func dropNextAnswers(_ count: Int, method: String? = nil, path: String? = nil) {
        script(.dropAnswer, count: count, method: method, path: path)
    }

    private func script(_ fault: ScriptedFault, count: Int, method: String?, path: String?) {
        guard count > 0 else { return }
        let run = ScriptedRun(fault: fault, method: method?.uppercased(), path: path, remaining: count)
        state.withLock { $0.scripted.append(run) }
    }

    enum Decision: Equatable {
        case pass
        case fail(status: Int, retryAfterSeconds: Int?)
        case drop
        /// The route handles the request, then its answer is dropped mid-response.
        case dropAnswer
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
        let (method, path) = (request.method.rawValue, request.uri.path)
        let (plan, scripted) = state.withLock { ($0.plan, $0.takeScripted(method: method, path: path)) }
        let latency = faults.latency ?? plan.drawLatency()
        let retryAfter = plan.retryAfterSeconds.flatMap { $0 >= 0 ? $0 : nil }
        if faults.drop { return (latency, .drop) }
        if let status = faults.status { return (latency, .fail(status: status, retryAfterSeconds: retryAfter)) }
        switch scripted {
        case .fail(let status, let retryAfterSeconds):
            return (latency, .fail(status: status, retryAfterSeconds: retryAfterSeconds.flatMap { $0 >= 0 ? $0 : nil }))
        case .dropAnswer:
            return (latency, .dropAnswer)
        case nil:
            break
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
            return Self.droppedAnswer
        case .dropAnswer:
            _ = try? await next(request, context)  // an error answer is lost as well
            return Self.droppedAnswer
        }
    }

    /// Promises more bytes than it sends, then fails the body: the connection closes mid-response.
    private static var droppedAnswer: Response {
        Response(
            status: .ok, headers: [.contentLength: "1000"],
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "partial"))
                throw DroppedConnection()
            })
    }
}
