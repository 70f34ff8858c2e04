import ArgumentParser
import Dispatch
import Foundation

/// `jobkit`: the root command.
struct JobKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobkit",
        abstract:
            "Compose asynchronous work with JobKit: download files, publish posts, demos of four scenarios and "
            + "their server.",
        subcommands: [DownloadCommand.self, PublishCommand.self, DemoCommand.self, ServeCommand.self])
}
