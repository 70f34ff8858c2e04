import ArgumentParser

@main
struct JobKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobkit",
        abstract:
            "Compose asynchronous work with JobKit: demos of four scenarios (downloads, publish, result queue, feed).",
        subcommands: [DemoCommand.self, ServeCommand.self])
}
