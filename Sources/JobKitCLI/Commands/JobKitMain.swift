import ArgumentParser
import Dispatch
import Foundation

/// The `jobkit` process: the command line goes to `JobKitCommand`, in a task, while the main queue is
/// serviced by `dispatchMain()`.
@main
enum JobKitMain {
    static func main() {
        MallocTuning.apply()
        // Before anything reads it (the argument parser does): an invalid COLUMNS is reported and dropped.
        _ = EnvironmentColumns.value
        Task {
            await JobKitCommand.main()
            exit(0)
        }
        dispatchMain()
    }
}
