import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(FoundationNetworking)
    /// The client's delegate queue: serial, with at most `limit` callbacks waiting.
    ///
    /// FoundationNetworking hands every chunk of every body to the delegate queue as an operation
    /// and never slows down: a delegate that writes slower than loopback delivers piles the bodies
    /// up in memory, without bound (BENCHMARKS.md). Its `suspend()` cannot help (it restarts the
    /// transfer). So adding an operation waits while `limit` are queued: the wait is on the
    /// session's own transfer thread, which stops reading sockets until the delegate catches up —
    /// TCP flow control does the rest. This is the one blocking wait in JobKit, and it never blocks
    /// a caller's thread or this queue: nothing on this queue calls a task's `resume()` or
    /// `cancel()` synchronously (they wait for the transfer thread), and an operation added from
    /// this queue itself never waits.
    // Safety: the permits are a semaphore; OperationQueue is itself thread-safe.
    final class DelegateQueue: OperationQueue, @unchecked Sendable {
        /// The most callbacks waiting at once: with libcurl's 16 KiB to 512 KiB chunks, a few MiB.
        static let limit = 256
        private let permits = DispatchSemaphore(value: DelegateQueue.limit)
        /// The thread the callbacks run on: the queue's own, never one of the shared global queues.
        private let dispatchQueue = DispatchQueue(label: "JobKitNetworking.TransferClient.delegate")

        override init() {
            super.init()
            underlyingQueue = dispatchQueue
        }

        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            if OperationQueue.current === self { return super.addOperation(block) }
            permits.wait()
            let permits = permits
            super.addOperation {
                block()
                permits.signal()
            }
        }
    }
#else
    /// The client's delegate queue (Apple platforms apply their own backpressure).
    typealias DelegateQueue = OperationQueue
#endif
