import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hears of a feed load, on the main actor: a screen conforms with its own methods. Held `weak`, so a
/// screen dismissed mid-request is neither kept alive nor called.
@MainActor
protocol FeedLoaderDelegate: AnyObject {
    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], APIError>)
}
