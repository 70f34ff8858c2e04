import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 003 in the demo: the same loader delivering to a main-actor screen, then on a queue of the
/// caller's.
struct ProductScenario: Sendable {
    @MainActor
    func run(on backend: DemoBackend) async -> Bool {
        let loader = ProductLoader(client: backend.client) { backend.url("products/\($0)") }
        let screen = ProductScreen(loader: loader)
        let product = await screen.show(productID: 7)
        backend.print("products: \(screen.title) — on the main queue: \(screen.answeredOnMainQueue)")
        let onMain = product != nil && screen.answeredOnMainQueue
        let background = DispatchQueue(label: "jobkit.demo.products")
        let key = DispatchSpecificKey<Bool>()
        background.setSpecific(key: key, value: true)
        let onBackground: Bool = await withCheckedContinuation { continuation in
            loader.loadProduct(withID: 8, resultQueue: background) { result in
                continuation.resume(
                    returning: (try? result.get()) != nil && DispatchQueue.getSpecific(key: key) == true)
            }
        }
        backend.print("products: product 8 delivered on the caller's queue: \(onBackground)")
        return onMain && onBackground
    }
}
