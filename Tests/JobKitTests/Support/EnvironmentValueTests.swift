import JobKitTestSupport
import Testing

@testable import JobKit

/// Numbers read from environment variables: hostile values are ignored with one line, never a trap.
@Suite struct EnvironmentValueTests {
    private func seconds(_ text: String?) -> EnvironmentValue {
        EnvironmentValue.parse(text, named: "JOBKIT_TEST", in: 0...86_400, expected: "a duration in seconds")
    }

    @Test(arguments: ["inf", "-inf", "infinity", "nan", "-nan", "1e30", "86401", "-1", "-0.5", "garbage", "2s", " 2"])
    func aHostileValueIsIgnoredWithOneLineNamingTheVariableAndTheValue(text: String) {
        let reading = seconds(text)
        #expect(reading.number == nil)
        guard case .invalid(let warning) = reading else {
            Issue.record("\(text) was read as \(reading)")
            return
        }
        #expect(warning == "warning: ignoring JOBKIT_TEST='\(text)': not a duration in seconds between 0 and 86400")
    }

    @Test func aValueInRangeIsRead() {
        #expect(seconds("2") == .number(2))
        #expect(seconds("0.25") == .number(0.25))
        #expect(seconds("0") == .number(0))
        #expect(seconds("86400") == .number(86_400))
    }

    @Test func anUnsetOrEmptyVariableIsNoValueAndNoWarning() {
        #expect(seconds(nil) == .unset)
        #expect(seconds("") == .unset)
    }

    @Test func anIntegralVariableTurnsAwayFractions() {
        let width = { (text: String) in
            EnvironmentValue.parse(text, named: "W", in: 1...100, integral: true, expected: "a width")
        }
        #expect(width("80") == .number(80))
        #expect(width("80.5").number == nil)
        #expect(width("1e1") == .number(10))
    }

    /// The warning stays one line, and short, whatever the value holds.
    @Test func theWarningIsOneBoundedLineWhateverTheValue() {
        guard case .invalid(let warning) = seconds("a\nb\r\u{1B}[2J" + String(repeating: "x", count: 10_000)) else {
            Issue.record("not invalid")
            return
        }
        #expect(!warning.contains("\n") && !warning.contains("\r") && !warning.contains("\u{1B}"))
        #expect(warning.hasPrefix("warning: ignoring JOBKIT_TEST='a?b??[2Jxxx"))
        #expect(warning.count < 200)
    }

    @Test func theWatchdogReadsOffZeroAndSecondsAndIgnoresTheRest() {
        #expect(MainQueueWatchdog.thresholdSetting("off") == .number(0))
        #expect(MainQueueWatchdog.thresholdSetting("0") == .number(0))
        #expect(MainQueueWatchdog.thresholdSetting("1.5") == .number(1.5))
        #expect(MainQueueWatchdog.thresholdSetting(nil) == .unset)
        for text in ["inf", "nan", "1e30", "-1", "garbage"] {
            #expect(
                MainQueueWatchdog.thresholdSetting(text)
                    == .invalid(
                        warning: "warning: ignoring JOBKIT_MAIN_WATCHDOG='\(text)': not off or a duration in seconds "
                            + "between 0 and 86400"))
        }
    }
}
