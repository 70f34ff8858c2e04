import Dispatch
import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A product from the catalogue (the result queue scenario).
struct CatalogProduct: Decodable, Sendable {
    var id: Int
    var name: String
    var price: Double
}
