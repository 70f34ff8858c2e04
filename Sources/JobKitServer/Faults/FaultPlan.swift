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
