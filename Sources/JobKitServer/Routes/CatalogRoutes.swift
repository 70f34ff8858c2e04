import Foundation
import Hummingbird

/// `GET /products/{id}` and `GET /feed` (the result queue and feed scenarios), generated deterministically.
struct CatalogRoutes {
    static let productCount = 100

    func register(on router: Router<BasicRequestContext>, routes: RouteTable) {
        router.route("products/:id", .get, routes: routes) { _, context in
            guard let id = context.parameters.get("id", as: Int.self), (1...Self.productCount).contains(id) else {
                return Response.error(.notFound, "no such product")
            }
            return try Response.json(Product(id: id, name: "Product \(id)", price: Double(id) * 1.25))
        }
        router.route("feed", .get, routes: routes) { request, _ in
            let limit = request.uri.queryParameters.get("limit", as: Int.self) ?? 10
            let results = (1...max(1, min(limit, 100))).map { index in
                MusicFeed.Music(
                    artistName: "Artist \(index)", id: String(1_000 + index), releaseDate: "2026-11-\(10 + index % 18)",
                    name: "Album \(index)", kind: "album", copyright: "℗ 2026 JobKit Records",
                    artistId: String(500 + index), artworkUrl100: "https://example.invalid/art/\(index).png")
            }
            return try Response.json(MusicFeed(feed: .init(results: results)))
        }
    }
}
