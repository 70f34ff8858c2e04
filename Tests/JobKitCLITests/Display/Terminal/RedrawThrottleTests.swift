import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// At most ten frames a second, and the last change always drawn.
@Suite struct RedrawThrottleTests {
    @Test func aBurstOfChangesGivesOneFrameNowAndOneAtTheEndOfTheInterval() {
        var throttle = RedrawThrottle()
        #expect(throttle.change(at: 10.0) == .drawNow)
        throttle.drew(at: 10.0)
        #expect(throttle.change(at: 10.01) == .drawAt(10.1))
        for time in stride(from: 10.02, to: 10.1, by: 0.01) { #expect(throttle.change(at: time) == .wait) }
        throttle.drew(at: 10.1)
        #expect(throttle.change(at: 10.25) == .drawNow)
    }

    @Test func framesPerSecondNeverExceedTen() {
        var throttle = RedrawThrottle()
        var frames: [Double] = []
        var scheduled: Double?
        for step in 0..<10_000 {  // a change every 0.1 ms for a second
            let now = Double(step) / 10_000
            if let due = scheduled, now >= due {
                frames.append(due)
                throttle.drew(at: due)
                scheduled = nil
            }
            switch throttle.change(at: now) {
            case .drawNow:
                frames.append(now)
                throttle.drew(at: now)
            case .drawAt(let time): scheduled = time
            case .wait: break
            }
        }
        #expect(frames.count <= 11)
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1 - $0 >= 0.1 - 1e-9 })
    }

    @Test func aClockThatGoesBackDrawsAtOnce() {
        var throttle = RedrawThrottle()
        throttle.drew(at: 100)
        #expect(throttle.change(at: 50) == .drawNow)
    }
}
