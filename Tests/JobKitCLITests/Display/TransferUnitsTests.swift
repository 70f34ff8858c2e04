import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Sizes, speeds and durations as the transfer display writes them.
@Suite struct TransferUnitsTests {
    @Test func bytesUseBinaryUnitsWithOneDecimalRoundedDown() {
        #expect(TransferUnits.bytes(0) == "0 B")
        #expect(TransferUnits.bytes(-5) == "0 B")
        #expect(TransferUnits.bytes(1023) == "1023 B")
        #expect(TransferUnits.bytes(1024) == "1.0 KiB")
        #expect(TransferUnits.bytes(1_048_575) == "1023.9 KiB")
        #expect(TransferUnits.bytes(100 << 20) == "100.0 MiB")
        #expect(TransferUnits.bytes(.max) == "8.0 EiB")
    }

    @Test func speedIsDashesWhenNothingMovesAndNeverTraps() {
        #expect(TransferUnits.speed(0) == "--")
        #expect(TransferUnits.speed(-1) == "--")
        #expect(TransferUnits.speed(.nan) == "--")
        #expect(TransferUnits.speed(.infinity) == "--")
        #expect(TransferUnits.speed(1.0e30) == "8.0 EiB/s")
        #expect(TransferUnits.speed(5 * 1_048_576) == "5.0 MiB/s")
    }

    @Test func durationsReadAsClockTimesAndUnknownAsDashes() {
        #expect(TransferUnits.duration(nil) == "--:--")
        #expect(TransferUnits.duration(.nan) == "--:--")
        #expect(TransferUnits.duration(-3) == "--:--")
        #expect(TransferUnits.duration(0) == "0:00")
        #expect(TransferUnits.duration(6.2) == "0:07")
        #expect(TransferUnits.duration(750) == "12:30")
        #expect(TransferUnits.duration(3723) == "1:02:03")
        #expect(TransferUnits.duration(1e300) == ">99h")
    }

    @Test func percentClampsAndIsNilWithoutATotal() {
        #expect(TransferUnits.percent(5, of: nil) == nil)
        #expect(TransferUnits.percent(50, of: 100) == 50)
        #expect(TransferUnits.percent(150, of: 100) == 100)
        #expect(TransferUnits.percent(-1, of: 100) == 0)
        #expect(TransferUnits.percent(0, of: 0) == 100)
        #expect(TransferUnits.percent(.max - 1, of: .max) == 99)
    }
}
