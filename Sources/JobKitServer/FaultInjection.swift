import Foundation
import Hummingbird
import NIOCore

/// Faults the server injects, so that clients' retries and timeouts can be shown and tested.
///
/// Per server: a latency range, a failure rate with its status (and `Retry-After`), a rate of dropped
/// connections, and a script of the next N requests to fail. Per request: the headers
/// `X-Fault-Latency-Ms`, `X-Fault-Status` and `X-Fault-Drop: 1`.
public struct FaultPlan: Sendable, Equatable {
    /// Every response waits a random time in this range, in milliseconds.
    public var latencyMilliseconds: ClosedRange<Int> = 0...0
    /// The share of requests (0...1) answered with `failureStatus` instead.
    public var failureRate: Double = 0
    public var failureStatus: Int = 503
    /// `Retry-After` (seconds) sent with injected failures.
    public var retryAfterSeconds: Int?
    /// The share of requests (0...1) whose connection is dropped mid-response.
    public var dropRate: Double = 0

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
}

/// The server's live fault settings; change them while it runs.
// Safety: `state` is only touched while `lock` is held.
public final class FaultController: @unchecked Sendable {
    private struct State {
        var plan: FaultPlan
        var scripted: [(status: Int, retryAfterSeconds: Int?)] = []
    }

    private let lock = NSLock()
    private var state: State

    init(plan: FaultPlan) {
        state = State(plan: plan)
    }

    /// The standing plan.
    public var plan: FaultPlan {
        get { lock.withLock { state.plan } }
        set { lock.withLock { state.plan = newValue } }
    }

    /// Fails the next `count` requests with `status` (and `Retry-After`, if given), whatever the plan says.
    public func failNext(_ count: Int, status: Int = 503, retryAfterSeconds: Int? = nil) {
        lock.withLock { state.scripted += Array(repeating: (status, retryAfterSeconds), count: count) }
    }

    enum Decision {
        case pass
        case fail(status: Int, retryAfterSeconds: Int?)
        case drop
    }

    /// Decides what happens to one request, and how long it waits first.
    func decide(for request: Request) -> (latency: Int, decision: Decision) {
        let headers = request.headers
        let (plan, scripted) = lock.withLock {
            (state.plan, state.scripted.isEmpty ? nil : state.scripted.removeFirst())
        }
        let latency =
            headers[values: .init("X-Fault-Latency-Ms")!].first.flatMap { Int($0) }
            ?? Int.random(in: plan.latencyMilliseconds)
        if headers[.init("X-Fault-Drop")!] == "1" { return (latency, .drop) }
        if let status = headers[.init("X-Fault-Status")!].flatMap({ Int($0) }) {
            return (latency, .fail(status: status, retryAfterSeconds: plan.retryAfterSeconds))
        }
        if let scripted {
            return (latency, .fail(status: scripted.status, retryAfterSeconds: scripted.retryAfterSeconds))
        }
        if plan.dropRate > 0, Double.random(in: 0..<1) < plan.dropRate { return (latency, .drop) }
        if plan.failureRate > 0, Double.random(in: 0..<1) < plan.failureRate {
            return (latency, .fail(status: plan.failureStatus, retryAfterSeconds: plan.retryAfterSeconds))
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
        case .fail(let status, let retryAfter):
            var headers: HTTPFields = [.contentType: "application/json"]
            if let retryAfter { headers[.retryAfter] = String(retryAfter) }
            let body = ByteBuffer(string: #"{"error":"injected failure"}"#)
            return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: body))
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
