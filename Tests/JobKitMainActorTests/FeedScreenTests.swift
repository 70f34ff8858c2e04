import Dispatch
import JobKit
import Testing

/// One album of seed 004's feed.
nonisolated struct Music: Sendable, Equatable {
    var name: String
}

/// Seed 004's delegate protocol: class-bound, held `weak`; main-actor by the target's default isolation.
protocol FeedLoaderDelegate: AnyObject {
    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], any Error>)
}

/// Seed 004's loader: by closure or by a weak delegate, both on the main actor.
final class FeedLoader {
    weak var delegate: (any FeedLoaderDelegate)?
    private let milliseconds: Int

    init(milliseconds: Int = 20) {
        self.milliseconds = milliseconds
    }

    @discardableResult
    func getAPI(completion: @escaping (Result<[Music], any Error>) -> Void) -> JobHandle {
        feed().perform { result in completion(result) }
    }

    @discardableResult
    func load() -> JobHandle {
        feed().perform { [weak self] result in
            guard let self, let delegate else { return }
            delegate.feedLoader(self, didFinishWith: result)
        }
    }

    private func feed() -> Job<[Music]> {
        slowJob([Music(name: "A"), Music(name: "B")], milliseconds: milliseconds)
    }
}

/// Seed 004's screen: the loader's delegate, and the run's delegate too (`JobDelegate`).
final class FeedScreen: FeedLoaderDelegate, JobDelegate {
    let loader: FeedLoader
    private(set) var albums: [Music] = []
    private(set) var progress: [Double] = []
    private(set) var finalState: JobState?
    private(set) var callsOnMainQueue: [Bool] = []
    private let onCall: () -> Void

    init(loader: FeedLoader, onCall: @escaping () -> Void = {}) {
        self.loader = loader
        self.onCall = onCall
        loader.delegate = self
    }

    func load() {
        loader.load().setDelegate(self)
    }

    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], any Error>) {
        note()
        albums = (try? result.get()) ?? []
    }

    func job(_ handle: JobHandle, didReportProgress fraction: Double) {
        note()
        progress.append(fraction)
    }

    func job(_ handle: JobHandle, didCompleteWith state: JobState) {
        note()
        finalState = state
    }

    private func note() {
        callsOnMainQueue.append(isOnMainQueue())
        onCall()
    }
}

@Suite struct FeedScreenTests {
    @Test func byClosureTheFeedComesOnTheMainQueue() async {
        var albums: [Music] = []
        var onMainQueue = false
        FeedLoader().getAPI { result in
            albums = (try? result.get()) ?? []
            onMainQueue = isOnMainQueue()
        }
        await waitUntil("the feed arrived") { !albums.isEmpty }
        #expect(albums.count == 2)
        #expect(onMainQueue)
    }

    @Test func bothDelegatesAreCalledOnTheMainQueue() async {
        let screen = FeedScreen(loader: FeedLoader())
        screen.load()
        await waitUntil("both delegates heard the end") { screen.albums.count == 2 && screen.finalState != nil }
        #expect(screen.finalState == .finished)
        #expect(screen.callsOnMainQueue.allSatisfy { $0 }, "every call on the main queue")
    }

    @Test func aScreenDismissedMidRequestIsNeitherKeptAliveNorCalled() async {
        var calls = 0
        weak var dismissed: FeedScreen?
        let handle: JobHandle = {
            let screen = FeedScreen(loader: FeedLoader(milliseconds: 100)) { calls += 1 }
            dismissed = screen
            let handle = screen.loader.load()
            handle.setDelegate(screen)
            return handle
        }()  // the screen is dismissed here, its request in flight
        for await _ in handle.states {}
        // The handler was queued on the main queue before the final state was observed: let it run.
        await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
        #expect(dismissed == nil)
        #expect(calls == 0)
    }
}
