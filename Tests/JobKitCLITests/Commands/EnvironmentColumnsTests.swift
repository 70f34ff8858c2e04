import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// `COLUMNS`, validated before the argument parser or the live display reads it.
@Suite struct EnvironmentColumnsTests {
    @Test(arguments: ["inf", "nan", "1e30", "-1", "0", "5", "28", "80.5", "10001", "wide"])
    func aHostileWidthIsIgnoredWithOneLineNamingIt(text: String) {
        guard case .invalid(let warning) = EnvironmentColumns.reading(text) else {
            Issue.record("COLUMNS=\(text) was accepted")
            return
        }
        #expect(warning.hasPrefix("warning: ignoring COLUMNS='\(text)': not a terminal width in columns between 30"))
    }

    @Test func aTerminalWidthIsRead() {
        #expect(EnvironmentColumns.reading("30") == .number(30))
        #expect(EnvironmentColumns.reading("132") == .number(132))
        #expect(EnvironmentColumns.reading(nil) == .unset)
    }
}
