import Dispatch
import JobKit
import JobKitCombine
import JobKitTestSupport
import Testing

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

/// A product of seed 003's catalogue.
nonisolated struct Product: Sendable, Equatable {
    var id: Int
    var title: String
}

/// Seed 003's loader: the job; where its answer is heard is the caller's choice.
nonisolated struct ProductLoader: Sendable {
    func loadProduct(id: Int) -> Job<Product> {
        slowJob(Product(id: id, title: "Product \(id)"))
    }
}

/// Seed 003's screen, as a Swift 6 app writes it: it hears the loader's answer on the main queue by
/// default — by closure, by Combine's `sink` and by the run's states — and sets its own title there.
final class ProductScreen {
    private let loader = ProductLoader()
    private(set) var title = ""
    private(set) var states: [JobState] = []
    private(set) var isFinished = false
    private(set) var callsOnMainQueue: [Bool] = []
    private var subscriptions = Set<AnyCancellable>()

    func show(id: Int) {
        loader.loadProduct(id: id).perform { result in
            self.callsOnMainQueue.append(isOnMainQueue())
            self.title = (try? result.get().title) ?? "Unavailable"
        }
    }

    /// With Combine: `sink`'s closures are the screen's (main-actor) closures, which Swift 6 checks at
    /// run time are called on the main actor.
    func showWithCombine(id: Int) {
        loader.loadProduct(id: id).publisher()
            .sink { completion in
                self.callsOnMainQueue.append(isOnMainQueue())
                self.isFinished = true
            } receiveValue: { product in
                self.callsOnMainQueue.append(isOnMainQueue())
                self.title = product.title
            }
            .store(in: &subscriptions)
    }

    /// The run's states through Combine, on the main queue.
    func watchWithCombine(id: Int) {
        let handle = loader.loadProduct(id: id).perform(resultQueue: DispatchQueue(label: "ignored")) { _ in }
        handle.statePublisher()
            .sink { state in
                self.callsOnMainQueue.append(isOnMainQueue())
                self.states.append(state)
            }
            .store(in: &subscriptions)
    }
}

@Suite struct ProductScreenTests {
    @Test func theAnswerReachesTheScreenOnTheMainQueue() async {
        let screen = ProductScreen()
        screen.show(id: 42)
        await waitUntil("the title is set") { screen.title == "Product 42" }
        #expect(screen.callsOnMainQueue == [true])
    }

    @Test func aSinkInTheScreenReceivesOnTheMainQueueWithoutATrap() async {
        let screen = ProductScreen()
        screen.showWithCombine(id: 7)
        await waitUntil("the publisher finished") { screen.isFinished }
        #expect(screen.title == "Product 7")
        #expect(screen.callsOnMainQueue == [true, true])
    }

    @Test func aStateSinkInTheScreenReceivesEveryStateOnTheMainQueue() async {
        let screen = ProductScreen()
        screen.watchWithCombine(id: 8)
        await waitUntil("the final state arrived") { screen.states.last == .finished }
        #expect(screen.callsOnMainQueue.allSatisfy { $0 }, "every state on the main queue")
    }

    @Test func aNamedQueueTakesASendableHandlerAndDeliversThere() async {
        let results = TaggedQueue("products")
        let delivered = Locked<Bool?>(nil)
        ProductLoader().loadProduct(id: 3).perform(resultQueue: results.queue) { _ in
            delivered.withLock { $0 = results.isCurrent }
        }
        await waitUntil("the answer was delivered") { delivered.current != nil }
        #expect(delivered.current == true)
    }
}
