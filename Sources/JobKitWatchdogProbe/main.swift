// A process that never services the main queue: the main-queue watchdog must warn on stderr.
// Launched by the tests (`MainQueueWatchdogTests`); arguments: threshold and run time, in milliseconds.
import Dispatch
import JobKit

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let thresholdMilliseconds = arguments.first ?? 200
let runMilliseconds = arguments.dropFirst().first ?? 1500

MainQueueWatchdog.threshold = .milliseconds(thresholdMilliseconds)
Job<Void>.empty.perform { _ in print("handler ran") }
// Top-level code runs on the main thread and never returns to a run loop or dispatchMain():
// the handler above waits on the main queue until the process exits.
let never = DispatchSemaphore(value: 0)
_ = never.wait(timeout: .now() + .milliseconds(runMilliseconds))
print("probe done")
