import Dispatch
import JobKit
import Testing

/// Seed 000's screen, as a Swift 6 app writes it (a main-actor class: the target's default isolation):
/// it publishes a post once every media upload succeeded, and hears of the run by its handler, by its
/// states and as its delegate — touching its own state in each, with no annotation and no hop.
final class PublishScreen: JobDelegate {
    private(set) var status = "not published"
    private(set) var states: [JobState] = []
    private(set) var delegateCalls: [String] = []
    /// For every call JobKit made: whether it came on the main queue.
    private(set) var callsOnMainQueue: [Bool] = []
    private(set) var isDone = false
    private var handle: JobHandle?

    /// Uploads `media` files in parallel (the last one failing with `failing`), then the post.
    func publish(media: Int, failing: Bool = false, on queue: DispatchQueue = .global()) {
        let uploads = (0..<media).map { index in
            failing && index == media - 1 ? Job<Void>.failure(UploadFailed()) : slowJob(())
        }
        let publish = Job.sequence([Job.group(uploads, maxConcurrent: 2), slowJob(())])
        let handle = publish.perform(on: queue) { result in
            self.note()
            self.status = (try? result.get()) != nil ? "published" : "not published"
            self.isDone = true
        }
        handle.onStateChange { state in
            self.note()
            self.states.append(state)
        }
        handle.setDelegate(self)
        self.handle = handle
    }

    private func note() {
        callsOnMainQueue.append(isOnMainQueue())
    }

    func job(_ handle: JobHandle, didChangeState state: JobState) {
        note()
        delegateCalls.append("state")
    }

    func job(_ handle: JobHandle, didReportProgress fraction: Double) {
        note()
        delegateCalls.append("progress")
    }

    func job(_ handle: JobHandle, didCompleteWith state: JobState) {
        note()
        delegateCalls.append("complete \(state)")
    }
}

@Suite struct PublishScreenTests {
    @Test func theHandlerTheStatesAndTheDelegateReachTheScreenOnTheMainQueue() async {
        let screen = PublishScreen()
        screen.publish(media: 3)
        await waitUntil("the post is published and every observer heard the end") {
            screen.isDone && screen.states.last == .finished && screen.delegateCalls.last == "complete finished"
        }
        #expect(screen.status == "published")
        #expect(screen.states.first == .pending || screen.states.first == .running(fraction: 0))
        #expect(screen.delegateCalls.contains("state"))
        #expect(!screen.callsOnMainQueue.isEmpty)
        #expect(screen.callsOnMainQueue.allSatisfy { $0 }, "every call on the main queue")
    }

    @Test func aFailedUploadIsShownOnTheMainQueueAndThePostIsNotPublished() async {
        let screen = PublishScreen()
        screen.publish(media: 3, failing: true, on: DispatchQueue(label: "publish"))
        await waitUntil("the publish failed and every observer heard it") {
            screen.isDone && screen.states.last == .failed && screen.delegateCalls.last == "complete failed"
        }
        #expect(screen.status == "not published")
        #expect(screen.callsOnMainQueue.allSatisfy { $0 }, "every call on the main queue")
    }
}
