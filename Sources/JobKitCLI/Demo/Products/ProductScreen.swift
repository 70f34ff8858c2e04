import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 003's screen: a main-actor class that shows a product, touching its own state in the loader's
/// handler as written.
@MainActor
final class ProductScreen {
    private let loader: ProductLoader
    /// What the screen shows: the product's name and price, or why it failed.
    private(set) var title = ""
    /// Whether the last answer came on the main queue.
    private(set) var answeredOnMainQueue = false

    init(loader: ProductLoader) {
        self.loader = loader
    }

    /// Loads and shows product `id`; returns once it is shown.
    func show(productID id: Int) async -> CatalogProduct? {
        await withCheckedContinuation { continuation in
            loader.loadProduct(withID: id) { result in
                let product = try? result.get()
                self.title = product.map { "\($0.name), $\($0.price)" } ?? "failed"
                self.answeredOnMainQueue = DemoBackend.isOnMainQueue
                continuation.resume(returning: product)
            }
        }
    }
}
