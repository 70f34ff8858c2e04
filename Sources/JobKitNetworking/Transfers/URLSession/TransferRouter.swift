import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Routes the session's delegate callbacks to the handler of each task.
final class TransferRouter: NSObject, URLSessionDataDelegate, Sendable {
    /// Where tasks are resumed and cancelled (see `RunningTransfer`): serial, with its own thread.
    let taskQueue = DispatchQueue(label: "JobKitNetworking.TransferClient.tasks")
    private let handlers = LockedBox<[Int: TransferHandler]>.make([:])
    private let delegate: (any TransferClientDelegate)?
    private let clientBox = LockedBox<WeakClient>.make(WeakClient(nil))

    init(delegate: (any TransferClientDelegate)?) {
        self.delegate = delegate
    }

    var client: WeakClient {
        get { clientBox.withLock { $0 } }
        set { clientBox.withLock { $0 = newValue } }
    }

    func register(_ handler: TransferHandler, for task: URLSessionTask) {
        handlers.withLock { $0[task.taskIdentifier] = handler }
    }

    /// Forgets the handler of a task that never started.
    func unregister(_ task: URLSessionTask) {
        _ = handlers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func handler(for task: URLSessionTask) -> TransferHandler? {
        handlers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        var receives = true
        let handler = handler(for: dataTask)
        if let handler, let http = response as? HTTPURLResponse {
            handler.expected = http.expectedContentLength
            do {
                receives = try handler.onResponse(http)
            } catch {
                handler.failure = error
                receives = false
            }
        }
        // Never `.cancel` here: FoundationNetworking traps on it (its transfer is not "failed" yet).
        // Allow, then drop or cancel the body.
        completionHandler(.allow)
        if !receives, let handler { dropBody(of: dataTask, handler) }
    }

    /// Stops using the rest of a body. A short rest is read and dropped: cancelling a task that is
    /// about to end can trap in FoundationNetworking (see `RunningTransfer.cancel`). A long one is
    /// cancelled, from another thread: `cancel()` waits for the session's transfer thread, which may
    /// itself be waiting for this queue (see `DelegateQueue`).
    private func dropBody(of task: URLSessionTask, _ handler: TransferHandler) {
        handler.discardsBody = true
        guard handler.expected < 0 || handler.expected - handler.received > 1 << 20 else { return }
        let box = UncheckedTask(task)
        taskQueue.async { box.task.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let handler = handler(for: dataTask), !handler.discardsBody else { return }
        handler.received += Int64(data.count)
        do { try handler.onData(data) } catch {
            handler.failure = error
            dropBody(of: dataTask, handler)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        handler(for: task)?.onSent(totalBytesSent, totalBytesExpectedToSend)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let handler = handlers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        handler.transfer?.finish()
        handler.onComplete(task.response, handler.failure ?? error)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        answer(challenge, loading: task.currentRequest?.url, completionHandler: completionHandler)
    }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        answer(challenge, loading: nil, completionHandler: completionHandler)
    }

    private func answer(
        _ challenge: URLAuthenticationChallenge, loading url: URL?,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // FoundationNetworking suspends and resumes the task inside the completion handler (each a
        // wait for the transfer thread): never call it on this queue (see `DelegateQueue`).
        let reply = UncheckedReply(completionHandler)
        let queue = taskQueue
        guard let delegate, let client = client.client else {
            return queue.async { reply.call(.performDefaultHandling, nil) }
        }
        let credential = UncheckedCredential()
        delegate.transferClient(client, didReceive: challenge, loading: url) { disposition, answer in
            credential.value = answer
            queue.async { reply.call(disposition, credential.value) }
        }
    }
}

/// A credential on its way to the session.
// Safety: written once, before the block that reads it is queued; URLCredential is immutable.
private final class UncheckedCredential: @unchecked Sendable {
    var value: URLCredential?
}

// Safety: the session's completion handler may be called from any thread, once; it is only called.
private struct UncheckedReply: @unchecked Sendable {
    let call: (URLSession.AuthChallengeDisposition, URLCredential?) -> Void

    init(_ call: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) { self.call = call }
}
