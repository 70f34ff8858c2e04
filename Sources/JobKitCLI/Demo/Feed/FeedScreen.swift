import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A screen that shows the feed: a main-actor class, the loader's delegate, owned by nobody but the
/// code that shows it.
@MainActor
final class FeedScreen: FeedLoaderDelegate {
    let loader: FeedLoader
    /// What the screen shows: the albums of the last answer.
    private(set) var albums: [Music] = []
    private let onAnswer: @MainActor () -> Void

    /// A screen showing `loader`'s feed; `onAnswer` runs each time an answer reaches the screen.
    init(loader: FeedLoader, onAnswer: @escaping @MainActor () -> Void = {}) {
        self.loader = loader
        self.onAnswer = onAnswer
        loader.delegate = self
    }

    func feedLoader(_ loader: FeedLoader, didFinishWith result: Result<[Music], APIError>) {
        albums = (try? result.get()) ?? []
        onAnswer()
    }
}
