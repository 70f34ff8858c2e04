import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 003's loader: its completion handler runs on the main queue — typed `@MainActor`, so callers
/// can never forget the hop to the main queue — unless the caller names another queue (then a
/// `@Sendable` handler runs there).
struct ProductLoader: Sendable {
    let client: TransferClient
    let urlResolver: @Sendable (Int) -> URL

    /// Loads a product; `completionHandler` runs once, on the main actor.
    @discardableResult
    func loadProduct(
        withID id: Int, completionHandler: @escaping @MainActor (Result<CatalogProduct, any Error>) -> Void
    ) -> JobHandle {
        job(id).perform(then: completionHandler)
    }

    /// Loads a product; `completionHandler` runs once, on `resultQueue`.
    @discardableResult
    func loadProduct(
        withID id: Int, resultQueue: DispatchQueue,
        completionHandler: @escaping @Sendable (Result<CatalogProduct, any Error>) -> Void
    ) -> JobHandle {
        job(id).perform(resultQueue: resultQueue, then: completionHandler)
    }

    private func job(_ id: Int) -> Job<CatalogProduct> {
        Job<CatalogProduct>.decode(for: URLRequest(url: urlResolver(id)), client: client).retryingTransientFailures()
    }
}
