import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A value read and written only on the main queue, where the demo's handlers run.
// Safety: only touched from handlers that JobKit delivers on the main queue.
final class MainQueueBox<Value>: @unchecked Sendable {
    var value: Value

    init(_ value: Value) { self.value = value }
}
