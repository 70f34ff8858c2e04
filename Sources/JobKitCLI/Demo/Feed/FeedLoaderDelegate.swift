import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hears of a feed load; held `weak`, so a screen dismissed mid-request is neither kept alive nor
/// called.
protocol FeedLoaderDelegate: AnyObject, Sendable {
    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], APIError>)
}
