import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct FeedResponse: Decodable {
    struct Feed: Decodable { var results: [Music] }
    var feed: Feed
}

/// Seed 004's loader, reporting by closure or by a weak delegate, always on the main queue.
final class FeedLoader: Sendable {
    private let client: TransferClient
    private let url: URL
    private let weakDelegate = LockedBox.make(WeakFeedLoaderDelegate())

    init(client: TransferClient, url: URL) {
        self.client = client
        self.url = url
    }

    var delegate: (any FeedLoaderDelegate)? {
        get { weakDelegate.withLock { $0.value } }
        set { weakDelegate.withLock { $0.value = newValue } }
    }

    /// Closure style: `completion` runs once, on the main queue. It is retained until then.
    @discardableResult
    func getAPI(completion: @escaping @Sendable (Result<[Music], APIError>) -> Void) -> JobHandle {
        feedJob().perform { completion(Self.apiResult($0)) }
    }

    /// Delegate style: the delegate, if it is still there when the answer comes, hears on main.
    @discardableResult
    func load() -> JobHandle {
        feedJob().perform { [weak self] result in
            guard let self, let delegate else { return }
            delegate.feedLoader(self, didFinishWith: Self.apiResult(result))
        }
    }

    private func feedJob() -> Job<[Music]> {
        Job<FeedResponse>.decode(for: URLRequest(url: url), client: client).map(\.feed.results)
    }

    private static func apiResult(_ result: Result<[Music], any Error>) -> Result<[Music], APIError> {
        result.mapError { .error("\($0)") }
    }
}
