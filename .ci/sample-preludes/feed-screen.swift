// Stand-ins for the README's main-actor screen (compiled with the main actor as default isolation).
import JobKit

struct Music: Sendable {
    var title: String
}

let newMusic = Job<[Music]>.just([Music(title: "song")])
