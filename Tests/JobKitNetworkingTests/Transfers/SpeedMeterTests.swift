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

    @Test func aTransferThatStartsOverForgetsItsOlderSamples() {
        var meter = SpeedMeter(window: 2_000_000_000)
        meter.record(0, at: 0)
        meter.record(1_000_000, at: 1_000_000_000)
        meter.record(0, at: 1_100_000_000)  // the retry starts from zero
        meter.record(100_000, at: 1_200_000_000)
        #expect(abs(meter.rate(100_000, at: 1_200_000_000) - 1_000_000) < 1)
    }

    @Test func theTimeLeftIsTheRestAtTheCurrentRate() {
        var meter = SpeedMeter(window: 2_000_000_000)
        meter.record(0, at: 0)
        meter.record(500_000, at: 1_000_000_000)
        #expect(meter.secondsRemaining(500_000, of: 1_500_000, at: 1_000_000_000) == 2)
        #expect(meter.secondsRemaining(500_000, of: nil, at: 1_000_000_000) == nil)
        #expect(SpeedMeter(window: 1).secondsRemaining(0, of: 10, at: 0) == nil)
    }

    @Test func aClockThatGoesBackAndTheExtremesNeverTrap() {
        var meter = SpeedMeter(window: .max)
        meter.record(.max, at: .max)
        meter.record(0, at: 0)
        meter.record(.max, at: 1)
        #expect(meter.rate(.max, at: 2) >= 0)
        #expect(meter.rate(0, at: 0) == 0)
    }
}
