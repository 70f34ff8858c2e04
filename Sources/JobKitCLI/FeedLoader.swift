import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 004's error type, with a readable description.
enum APIError: Error, CustomStringConvertible {
    case error(String)
    case errorURL

    var description: String {
        switch self {
        case .error(let message): "API error: \(message)"
        case .errorURL: "API error: bad URL"
        }
    }
}

/// One entry of the feed.
struct Music: Decodable, Sendable {
    var artistName: String
    var id: String
    var releaseDate: String
    var name: String
    var kind: String
    var copyright: String
    var artistId: String
    var artworkUrl100: String
}

private struct FeedResponse: Decodable {
    struct Feed: Decodable { var results: [Music] }
    var feed: Feed
}

/// Hears of a feed load; held `weak`, so a screen dismissed mid-request is neither kept alive nor
/// called.
protocol FeedLoaderDelegate: AnyObject, Sendable {
    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], APIError>)
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

/// Seed 004 in the demo: the feed by closure, then by a delegate whose screen closes mid-request.
struct FeedScenario: Sendable {
    func run(on backend: DemoBackend) async -> Bool {
        let loader = FeedLoader(client: backend.client, url: backend.url("feed?limit=5"))
        let byClosure: Bool = await withCheckedContinuation { continuation in
            loader.getAPI { result in
                let count = (try? result.get())?.count ?? 0
                backend.print("feed: \(count) albums by closure, on the main queue: \(DemoBackend.isOnMainQueue)")
                continuation.resume(returning: count == 5)
            }
        }
        // A session whose requests the server holds for 300 ms: the screen closes before the answer.
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = ["X-Fault-Latency-Ms": "300"]
        let slowClient = TransferClient(configuration: configuration)
        let calls = MainQueueBox(0)
        weak var closedScreen: FeedScreen?
        let handle: JobHandle = {
            let screen = FeedScreen(loader: FeedLoader(client: slowClient, url: backend.url("feed")), calls: calls)
            closedScreen = screen
            return screen.loader.load()
        }()  // the screen is dismissed here, with its request in flight
        for await _ in handle.states {}
        await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
        let gone = closedScreen == nil
        backend.print("feed: screen closed mid-request — deallocated: \(gone), delegate called: \(calls.value) times")
        return byClosure && gone && calls.value == 0
    }
}

/// The feed loader's delegate, held weakly.
// Safety: `value` is a weak reference to a Sendable object, only touched under its LockedBox's lock.
struct WeakFeedLoaderDelegate: @unchecked Sendable {
    weak var value: (any FeedLoaderDelegate)?
}
