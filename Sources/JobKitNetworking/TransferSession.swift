import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one transfer does with its session's delegate callbacks. Called on the session's delegate
/// queue (serial), so a handler's own state needs no lock.
// Safety: every callback arrives on the owning session's serial delegate queue, one at a time.
final class TransferHandler: @unchecked Sendable {
    var onResponse: (HTTPURLResponse) throws -> Void = { _ in }
    var onData: (Data) throws -> Void = { _ in }
    var onSent: (_ sent: Int64, _ expected: Int64) -> Void = { _, _ in }
    var onComplete: (_ response: URLResponse?, _ error: (any Error)?) -> Void = { _, _ in }
    /// A failure raised by `onResponse` or `onData` (a file that cannot be written, say).
    var failure: (any Error)?
}

/// Routes a session's delegate callbacks to the handler of each task.
// Safety: `handlers` is only touched while `lock` is held.
final class TransferDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var handlers: [Int: TransferHandler] = [:]

    func register(_ handler: TransferHandler, for task: URLSessionTask) {
        lock.withLock { handlers[task.taskIdentifier] = handler }
    }

    private func handler(for task: URLSessionTask) -> TransferHandler? {
        lock.withLock { handlers[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        if let handler = handler(for: dataTask), let http = response as? HTTPURLResponse {
            do { try handler.onResponse(http) } catch { handler.failure = error }
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let handler = handler(for: dataTask), handler.failure == nil else { return }
        do { try handler.onData(data) } catch { handler.failure = error }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        handler(for: task)?.onSent(totalBytesSent, totalBytesExpectedToSend)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let handler = lock.withLock({ handlers.removeValue(forKey: task.taskIdentifier) }) else { return }
        handler.onComplete(task.response, handler.failure ?? error)
    }
}

/// For each session an app passes in, one session with the same configuration whose delegate
/// reports progress — the app keeps its configuration (headers, timeouts, caches, proxies), and
/// progress works on every platform, where byte counters of completion-handler tasks do not.
enum TransferSessions {
    private static let sessions = Locked([ObjectIdentifier: (URLSession, TransferDelegate)]())

    static func session(for session: URLSession) -> (URLSession, TransferDelegate) {
        sessions.withLock { sessions in
            if let existing = sessions[ObjectIdentifier(session)] { return existing }
            let delegate = TransferDelegate()
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            let made = (
                URLSession(configuration: session.configuration, delegate: delegate, delegateQueue: queue), delegate
            )
            sessions[ObjectIdentifier(session)] = made
            return made
        }
    }
}

/// A lock-protected value.
// Safety: `value` is only touched while `lock` is held.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}

extension Job.Controller {
    /// Starts `task` with `handler` on `delegate`, and cancels the task with the run.
    func start(_ task: URLSessionTask, handler: TransferHandler, on delegate: TransferDelegate) {
        delegate.register(handler, for: task)
        let box = UncheckedTask(task)
        onCancel { box.task.cancel() }
        task.resume()
    }
}

// Safety: URLSessionTask is thread-safe; it is only resumed and cancelled through this box.
struct UncheckedTask: @unchecked Sendable {
    let task: URLSessionTask

    init(_ task: URLSessionTask) { self.task = task }
}
