// Stand-ins for "Delegate or closure": a feed job.
import JobKit

let loadFeed = Job<[String]>.just(["song"])
