// Stand-in for the README's TestScheduler sample: a job that never finishes by itself.
import JobKit

let slowJob = Job<Void> { _ in }
