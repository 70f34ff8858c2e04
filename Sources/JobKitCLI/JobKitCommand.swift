import ArgumentParser

@main
struct JobKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobkit",
        abstract: "Compose asynchronous work with JobKit: demos of the seed scenarios.",
        subcommands: [DemoCommand.self, ServeCommand.self])
}
