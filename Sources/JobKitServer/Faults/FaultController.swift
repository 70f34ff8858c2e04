import Foundation
import Hummingbird
import JobKit
import NIOCore

/// The server's live fault settings; change them while it runs.
///
/// **Threading.** Thread-safe: change the plan from any thread while requests are served; each request reads
/// the plan once, when it arrives.
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
