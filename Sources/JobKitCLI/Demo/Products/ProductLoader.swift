import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 003's loader: the queue its completion handler runs on is injected, defaulting to main, so
/// callers can never forget the hop to the main queue — and can opt out of it.
struct ProductLoader: Sendable {
    let client: TransferClient
    let urlResolver: @Sendable (Int) -> URL

    /// Loads a product; `completionHandler` runs once, on `resultQueue`.
    @discardableResult
    func loadProduct(
        withID id: Int, resultQueue: DispatchQueue = .main,
        completionHandler: @escaping @Sendable (Result<CatalogProduct, any Error>) -> Void
    ) -> JobHandle {
        Job<CatalogProduct>.decode(for: URLRequest(url: urlResolver(id)), client: client)
            .retryingTransientFailures()
            .perform(resultQueue: resultQueue, then: completionHandler)
    }
}
