// Stand-ins for the README's async sample.
struct Music: Sendable {
    var title: String
}

struct MusicAPI: Sendable {
    func newMusic() async throws -> [Music] { [] }
}

let api = MusicAPI()
