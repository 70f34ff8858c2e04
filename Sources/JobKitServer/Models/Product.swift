import Foundation
import Hummingbird

/// A product of the catalogue (the demo's result queue scenario).
package struct Product: ResponseCodable, Equatable, Sendable {
    /// The product's id, as in `GET /products/{id}`.
    package var id: Int
    /// The product's name.
    package var name: String
    /// The product's price.
    package var price: Double
}
