import Foundation

/// How long `retry` waits before each new attempt.
public enum Backoff: Sendable, Equatable {
    /// Retry at once.
    case none
    /// Wait the same time before every retry.
    case constant(Duration)
    /// Wait `initial`, then `multiplier` times longer before each further retry, never more than
    /// `maximum`; `jitter` (0...1) spreads each wait at random by up to that fraction either way, so
    /// that many clients do not retry in lockstep.
    case exponential(initial: Duration, multiplier: Double = 2, maximum: Duration, jitter: Double = 0)

    /// The wait before retry number `retry` (1 for the first retry). Never traps: a NaN or negative
    /// multiplier, jitter or duration gives no wait, and an infinite one the longest representable.
    ///
    /// - Parameters:
    ///   - retry: which retry this is: 1 before the second attempt, 2 before the third, and so on.
    ///   - unitRandom: a number in `0...1`; the jitter maps 0 to the shortest and 1 to the
    ///     longest wait.
    /// - Returns: how long to wait; never negative.
    public func delay(beforeRetry retry: Int, unitRandom: Double = Double.random(in: 0...1)) -> Duration {
        switch self {
        case .none:
            return .zero
        case .constant(let delay):
            return max(delay, .zero)
        case .exponential(let initial, let multiplier, let maximum, let jitter):
            let growth = Foundation.pow(multiplier, retry > 1 ? Double(retry - 1) : 0)
            let base = min(seconds(initial) * growth, seconds(maximum))
            let spread = min(max(jitter, 0), 1) * (2 * min(max(unitRandom, 0), 1) - 1)
            return .saturating(seconds: min(base * (1 + spread), seconds(maximum)))
        }
    }

    private func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// An error that says how long to wait before trying again (an HTTP `Retry-After`, say). `retry`
/// waits at least that long, whatever its backoff says.
public protocol RetryAfterProviding: Error {
    /// How long to wait at least before the next attempt; `nil` leaves the backoff's wait as it is.
    var retryAfter: Duration? { get }
}

extension Duration {
    /// `seconds` as a duration: NaN and negative values are zero, huge ones 2⁶² seconds.
    static func saturating(seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }  // also NaN
        guard seconds < 4e18 else { return .seconds(Int64(1) << 62) }
        return .seconds(seconds)
    }
}
