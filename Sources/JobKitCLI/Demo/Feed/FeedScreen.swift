import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A screen that shows the feed: the delegate, owned by nobody but the code that shows it.
// Safety: `loader` is set once in init; the callback counter is only touched on the main queue.
final class FeedScreen: FeedLoaderDelegate, @unchecked Sendable {
    let loader: FeedLoader
    let calls: MainQueueBox<Int>

    init(loader: FeedLoader, calls: MainQueueBox<Int>) {
        self.loader = loader
        self.calls = calls
        loader.delegate = self
    }

    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], APIError>) {
        calls.value += 1
    }
}
