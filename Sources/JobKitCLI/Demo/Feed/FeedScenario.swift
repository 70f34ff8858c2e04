import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 004 in the demo: the feed by closure, then by a delegate whose screen closes mid-request.
struct FeedScenario: Sendable {
    @MainActor
    func run(on backend: DemoBackend) async -> Bool {
        let loader = FeedLoader(client: backend.client, url: backend.url("feed?limit=5"))
        let byClosure: Bool = await withCheckedContinuation { continuation in
            loader.getAPI { result in
                let count = (try? result.get())?.count ?? 0
                backend.print("feed: \(count) albums by closure, on the main queue: \(DemoBackend.isOnMainQueue)")
                continuation.resume(returning: count == 5 && DemoBackend.isOnMainQueue)
            }
        }
        // A session whose requests the server holds for 300 ms: the screen closes before the answer.
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = ["X-Fault-Latency-Ms": "300"]
        let slowClient = TransferClient(configuration: configuration)
        // A counter the main-actor closure shares with this function (a captured `var` is refused by the
        // release build's region checks).
        let calls = LockedBoxCounter()
        weak var closedScreen: FeedScreen?
        let handle: JobHandle = {
            let screen = FeedScreen(loader: FeedLoader(client: slowClient, url: backend.url("feed"))) {
                _ = calls.increment()
            }
            closedScreen = screen
            return screen.loader.load()
        }()  // the screen is dismissed here, with its request in flight
        for await _ in handle.states {}
        await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
        let gone = closedScreen == nil
        backend.print("feed: screen closed mid-request — deallocated: \(gone), delegate called: \(calls.count) times")
        return byClosure && gone && calls.count == 0
    }
}
