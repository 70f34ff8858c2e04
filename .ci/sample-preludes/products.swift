// Stand-ins for "Choosing the result queue": a product and a callback catalogue.
struct Product: Sendable {
    var id: Int
    var title: String
}

final class Catalog: Sendable {
    func fetchProduct(id: Int, then done: @escaping @Sendable (Result<Product, any Error>) -> Void) {
        done(.success(Product(id: id, title: "Product \(id)")))
    }
}

let catalog = Catalog()
