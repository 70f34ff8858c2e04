import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 003 in the demo: the same loader delivering on main, then on a queue of the caller's.
struct ProductScenario: Sendable {
    func run(on backend: DemoBackend) async -> Bool {
        let loader = ProductLoader(client: backend.client) { backend.url("products/\($0)") }
        let background = DispatchQueue(label: "jobkit.demo.products")
        let key = DispatchSpecificKey<Bool>()
        background.setSpecific(key: key, value: true)
        let onMain: Bool = await withCheckedContinuation { continuation in
            loader.loadProduct(withID: 7) { result in
                let product = try? result.get()
                backend.print("products: \(product.map { "\($0.name), $\($0.price)" } ?? "failed") — on the main queue")
                continuation.resume(returning: product != nil && DemoBackend.isOnMainQueue)
            }
        }
        let onBackground: Bool = await withCheckedContinuation { continuation in
            loader.loadProduct(withID: 8, resultQueue: background) { result in
                let ok = (try? result.get()) != nil && DispatchQueue.getSpecific(key: key) == true
                DispatchQueue.main.async { backend.print("products: product 8 delivered on the caller's queue: \(ok)") }
                continuation.resume(returning: ok)
            }
        }
        return onMain && onBackground
    }
}
