import JobKitTestSupport
import Testing

/// The `jobkit` root command, run as a user runs it.
@Suite struct JobKitCommandTests {
    @Test func helpOffersOnlyTheUserCommandsAndNamesScenariosNotSeeds() async throws {
        let output = try await runProduct("jobkit", arguments: ["--help"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("demo") && output.stdout.contains("serve"))
        #expect(!output.stdout.contains("_probe"), "no test probe")
        let probe = try await runProduct("jobkit", arguments: ["_probe", "threads"])
        #expect(probe.status == 64, "the shipped binary has no probe: \(probe.stdout)")
        #expect(!output.stdout.lowercased().contains("seed"))
        let demoHelp = try await runProduct("jobkit", arguments: ["demo", "--help"])
        #expect(!demoHelp.stdout.lowercased().contains("seed"))
        #expect(demoHelp.stdout.contains("result queue"))
    }

    /// The argument parser wraps help at `COLUMNS`, and trapped on a width it has no room in (`-1`,
    /// `5`): `jobkit` now ignores a hostile width with one line and wraps at the terminal's or 80.
    @Test(arguments: ["inf", "nan", "1e30", "-1", "5", "garbage"])
    func aHostileColumnsIsIgnoredWithOneWarning(value: String) async throws {
        let output = try await runProduct("jobkit", arguments: ["download", "--help"], environment: ["COLUMNS": value])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("OVERVIEW: Download files"))
        #expect(
            output.stderr.split(separator: "\n") == [
                "warning: ignoring COLUMNS='\(value)': not a terminal width in columns between 30 and 10000"
            ])
    }
}
