// The main-queue watchdog's test subject, launched by `MainQueueWatchdogTests`.
//   JobKitWatchdogProbe THRESHOLD_MS RUN_MS block   never services the main queue: the watchdog must warn
//   JobKitWatchdogProbe THRESHOLD_MS RUN_MS serve   services it with dispatchMain(): it must stay quiet
import Dispatch
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let thresholdMilliseconds = arguments.first.flatMap(Int.init) ?? 200
let runMilliseconds = arguments.dropFirst().first.flatMap(Int.init) ?? 1500
let servesMainQueue = arguments.dropFirst(2).first == "serve"

MainQueueWatchdog.threshold = .milliseconds(thresholdMilliseconds)
Job<Void>.empty.perform { _ in print("handler ran") }

if servesMainQueue {
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(runMilliseconds)) {
        print("probe done")
        exit(0)
    }
    dispatchMain()
} else {
    // Top-level code runs on the main thread and never returns to a run loop or dispatchMain():
    // the handler above waits on the main queue until the process exits.
    let never = DispatchSemaphore(value: 0)
    _ = never.wait(timeout: .now() + .milliseconds(runMilliseconds))
    print("probe done")
}
