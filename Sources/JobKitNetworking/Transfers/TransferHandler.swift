import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one transfer does with its session's delegate callbacks. Called on the client's delegate
/// queue (serial) — or, through AsyncHTTPClient, on its event loop or SwiftNIO's blocking pool,
/// each callback after the one before returned (`HTTPClientTransfer`) — so a handler's own state
/// needs no lock.
// Safety: every callback arrives on the owning client's serial delegate queue, one at a time, or
// from an `HTTPClientTransfer`, which runs each on its event loop or submits it to the pool once
// the one before has run.
package final class TransferHandler: @unchecked Sendable {
    /// Decides what to do with the response: true to receive its body, false to end the task (it
    /// then completes with `URLError(.cancelled)`).
    package var onResponse: (HTTPURLResponse) throws -> Bool = { _ in true }
    package var onData: (Data) throws -> Void = { _ in }
    /// Takes the body's bytes instead of `onData` where the transport has them in a buffer of its
    /// own (AsyncHTTPClient): no copy into a `Data`.
    package var onBytes: ((UnsafeRawBufferPointer) throws -> Void)?
    package var onSent: (_ sent: Int64, _ expected: Int64) -> Void = { _, _ in }
    package var onComplete: (_ response: URLResponse?, _ error: (any Error)?) -> Void = { _, _ in }
    /// A failure raised by `onResponse` or `onData` (a file that cannot be written, say).
    package var failure: (any Error)?
    /// The task's start and cancellation; set before the task starts.
    package var transfer: RunningTransfer?
    /// The body length the response announced (-1: unknown), and the bytes received so far.
    package var expected: Int64 = -1
    package var received: Int64 = 0
    /// The rest of the body is dropped as it arrives.
    package var discardsBody = false
    /// The callbacks never flush or cut a large file, so they take microseconds while the disk
    /// keeps up: AsyncHTTPClient may run them on its event loop (see `HTTPClientTransfer`).
    package var isQuick = false

    package init() {}
}

extension TransferHandler {
    /// Collects the body in memory and completes `controller` with the validated response.
    static func collecting(
        into controller: Job<HTTPReply>.Controller, url: URL?, reportsReceiving: Bool = true
    ) -> TransferHandler {
        let handler = TransferHandler()
        var body = Data()
        var expected: Int64 = -1
        var reported: Int64 = -1
        handler.onResponse = {
            expected = $0.expectedContentLength
            return true
        }
        handler.onData = { data in
            body.append(data)
            // At most a thousand progress reports a transfer.
            if reportsReceiving, expected > 0, Int64(body.count) * 1000 / expected != reported {
                reported = Int64(body.count) * 1000 / expected
                controller.report(progress: min(1, Double(body.count) / Double(expected)))
            }
        }
        handler.onComplete = { response, error in
            controller.completeOnQueue(with: HTTPReply.validated(body, response, error, url: url))
        }
        return handler
    }
}
