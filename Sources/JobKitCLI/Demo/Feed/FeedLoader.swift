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

/// Seed 004's loader, reporting by closure or by a weak delegate, always on the main actor: a screen's
/// model, as an app writes it.
@MainActor
final class FeedLoader {
    private let client: TransferClient
    private let url: URL
    /// Held weakly: the screen owns the loader, never the other way round.
    weak var delegate: (any FeedLoaderDelegate)?

    init(client: TransferClient, url: URL) {
        self.client = client
        self.url = url
    }

    /// Closure style: `completion` runs once, on the main actor. It is retained until then.
    @discardableResult
    func getAPI(completion: @escaping @MainActor (Result<[Music], APIError>) -> Void) -> JobHandle {
        feedJob().perform { completion(Self.apiResult($0)) }
    }

    /// Delegate style: the delegate, if it (and this loader) is still there when the answer comes,
    /// hears on the main actor.
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
