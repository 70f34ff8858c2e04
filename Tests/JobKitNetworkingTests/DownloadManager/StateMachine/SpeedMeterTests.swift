import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

@Suite struct SpeedMeterTests {
    @Test func aSteadyFlowMeasuresItsRate() {
        var meter = SpeedMeter(window: 2_000_000_000)
        for tick in 0...20 { meter.record(Int64(tick) * 50_000, at: UInt64(tick) * 100_000_000) }
        #expect(abs(meter.rate(1_000_000, at: 2_000_000_000) - 500_000) < 1)
    }

    @Test func aBurstFadesOutOfTheWindow() {
        var meter = SpeedMeter(window: 1_000_000_000)
        meter.record(0, at: 0)
        meter.record(1_000_000, at: 100_000_000)
        #expect(meter.rate(1_000_000, at: 100_000_000) > 1_000_000)
        meter.record(1_000_000, at: 1_500_000_000)
        meter.record(1_000_000, at: 2_000_000_000)
        #expect(meter.rate(1_000_000, at: 2_000_000_000) == 0)
    }

    @Test func noSamplesIsNoSpeed() {
        #expect(SpeedMeter(window: 1).rate(100, at: 5) == 0)
    }
}
