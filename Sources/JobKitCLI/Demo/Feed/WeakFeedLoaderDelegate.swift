import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The feed loader's delegate, held weakly.
// Safety: `value` is a weak reference to a Sendable object, only touched under its LockedBox's lock.
struct WeakFeedLoaderDelegate: @unchecked Sendable {
    weak var value: (any FeedLoaderDelegate)?
}
