// Downloads `count` files named `<prefix><n>` from `base` into `folder`, `width` at a time, either
// with a plain delegate-based URLSession program or with JobKitNetworking, and prints the wall time
// and the peak resident set: `NetworkingBench plain|jobkit <base> <prefix> <count> <folder> <width>`.
import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The plain program: one session, a delegate writing each body to its file, `width` tasks in flight.
final class PlainDownloader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safety: every delegate callback runs on the session's serial delegate queue; `next`/`done` are
    // only touched there and in `start`, before the first task runs.
    var files: [Int: FileHandle] = [:]
    var next = 0
    var done = 0
    let urls: [(URL, URL)]
    let width: Int
    let finished = DispatchSemaphore(value: 0)
    var session: URLSession!

    init(urls: [(URL, URL)], width: Int) {
        self.urls = urls
        self.width = width
    }

    func start() {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = width
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        queue.addOperation { for _ in 0..<min(self.width, self.urls.count) { self.startNext() } }
        finished.wait()
    }

    func startNext() {
        guard next < urls.count else { return }
        let (url, file) = urls[next]
        next += 1
        FileManager.default.createFile(atPath: file.path, contents: nil)
        let task = session.dataTask(with: url)
        files[task.taskIdentifier] = try! FileHandle(forWritingTo: file)
        task.resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        try! files[dataTask.taskIdentifier]!.write(contentsOf: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { fatalError("\(error)") }
        try! files.removeValue(forKey: task.taskIdentifier)!.close()
        done += 1
        if done == urls.count { finished.signal() } else { startNext() }
    }
}

func peakResidentMiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) / 1024
    }
    return 0
}

let arguments = CommandLine.arguments
guard arguments.count == 7, let count = Int(arguments[4]), let width = Int(arguments[6]) else {
    print("usage: NetworkingBench plain|jobkit <base> <prefix> <count> <folder> <width>")
    exit(2)
}
let base = URL(string: arguments[2])!
let folder = URL(fileURLWithPath: arguments[5])
let pairs = (0..<count).map { index in
    (base.appendingPathComponent("\(arguments[3])\(index)"), folder.appendingPathComponent("\(arguments[3])\(index)"))
}
let start = DispatchTime.now().uptimeNanoseconds
switch arguments[1] {
case "plain":
    PlainDownloader(urls: pairs, width: width).start()
case "jobkit":
    let client = TransferClient(maxConnectionsPerHost: width)
    let jobs = pairs.map { Job<URL>.download(from: $0.0, to: $0.1, transport: .urlSession(client)).asVoid() }
    let done = DispatchSemaphore(value: 0)
    Job.group(jobs, maxConcurrent: width).perform(resultQueue: .global()) { result in
        if case .failure(let error) = result { fatalError("\(error.localizedDescription)") }
        done.signal()
    }
    done.wait()
default:
    print("unknown mode \(arguments[1])")
    exit(2)
}
let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
print(String(format: "%@ %d files: %.3f s, peak RSS %d MiB", arguments[1], count, seconds, peakResidentMiB()))
