import Testing

/// The `jobkit` root command, run as a user runs it.
@Suite struct JobKitCommandTests {
    @Test func helpOffersOnlyTheUserCommandsAndNamesScenariosNotSeeds() throws {
        let output = try runProduct("jobkit", arguments: ["--help"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("demo") && output.stdout.contains("serve"))
        #expect(!output.stdout.contains("_probe"), "the test probe is hidden")
        #expect(!output.stdout.lowercased().contains("seed"))
        let demoHelp = try runProduct("jobkit", arguments: ["demo", "--help"])
        #expect(!demoHelp.stdout.lowercased().contains("seed"))
        #expect(demoHelp.stdout.contains("result queue"))
    }
}
