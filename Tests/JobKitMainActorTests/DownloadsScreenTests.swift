import Dispatch
import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

/// Seed 002's screen, as a Swift 6 app writes it: a queue of downloads, at most a few at once, each row
/// shown as its state changes, a completed one moved to the top of the completed list, one banner when
/// all are done — all in the queue's handlers, on the main actor.
final class DownloadsScreen {
    private(set) var rows: [Int: JobState] = [:]
    private(set) var completed: [Int] = []
    private(set) var banner = ""
    private(set) var callsOnMainQueue: [Bool] = []
    private var downloads: JobQueue<Int>?

    func start(jobs: Int, maxConcurrent: Int) {
        let downloads = JobQueue<Int>(maxConcurrent: maxConcurrent) { id, state in
            self.callsOnMainQueue.append(isOnMainQueue())
            self.rows[id] = state
        } onAllFinished: {
            self.callsOnMainQueue.append(isOnMainQueue())
            self.banner = "All download tasks have been completed"
            self.downloads = nil
        }
        for id in 1...jobs {
            try? downloads.add(slowJob(id), id: id) { result in  // this download's own result
                self.callsOnMainQueue.append(isOnMainQueue())
                if let id = try? result.get() { self.completed.insert(id, at: 0) }
            }
        }
        self.downloads = downloads
    }
}

/// The download manager's screen: every update on the main actor.
final class DownloadManagerScreen {
    private(set) var failed: [String] = []
    private(set) var updates = 0
    private(set) var callsOnMainQueue: [Bool] = []
    private(set) var manager: DownloadManager?

    func open(_ folder: URL, downloading url: URL) throws {
        let manager = try DownloadManager(directory: folder, configuration: .init(retry: .none)) { update in
            self.callsOnMainQueue.append(isOnMainQueue())
            self.updates += 1
            for case .changed(let item) in update.events {
                if case .failed = item.state { self.failed.append(item.name) }
            }
        }
        try manager.add(url)
        self.manager = manager
    }
}

@Suite struct DownloadsScreenTests {
    @Test func everyStateEveryResultAndTheBannerReachTheScreenOnTheMainQueue() async {
        let screen = DownloadsScreen()
        screen.start(jobs: 6, maxConcurrent: 2)
        await waitUntil("every download completed and the banner shows") {
            screen.banner == "All download tasks have been completed" && screen.completed.count == 6
        }
        #expect(screen.rows.count == 6)
        #expect(screen.rows.values.allSatisfy { $0 == .finished })
        #expect(Set(screen.completed) == Set(1...6))
        #expect(screen.callsOnMainQueue.allSatisfy { $0 }, "every call on the main queue")
    }

    @Test func aQueueGivenAResultQueueTakesSendableHandlersAndDeliversThere() async throws {
        let results = TaggedQueue("results")
        let seen = LockedCount()
        let downloads = JobQueue<Int>(maxConcurrent: 2, resultQueue: results.queue) { _, _ in
            seen.add(results.isCurrent)
        }
        try downloads.add(slowJob(1), id: 1, resultQueue: results.queue) { _ in seen.add(results.isCurrent) }
        await downloads.waitUntilIdle()
        await waitUntil("the job's own result was delivered") { seen.count >= 4 }
        #expect(seen.allOnQueue)
    }

    @Test func theDownloadManagersUpdatesReachTheScreenOnTheMainQueue() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-main-actor-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let screen = DownloadManagerScreen()
        // Nothing listens on port 9 of the loopback: the download fails at once, and is not retried.
        try screen.open(folder, downloading: URL(string: "http://127.0.0.1:9/a.bin")!)
        await waitUntil("the failed download is shown") { screen.failed == ["a.bin"] }
        screen.manager?.close()
        #expect(screen.updates > 0)
        #expect(screen.callsOnMainQueue.allSatisfy { $0 }, "every update on the main queue")
    }

    @Test func aManagerGivenAResultQueueTakesASendableHandlerAndDeliversThere() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-main-actor-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let results = TaggedQueue("updates")
        let seen = LockedCount()
        let manager = try DownloadManager(
            directory: folder, configuration: .init(retry: .none), resultQueue: results.queue
        ) {
            _ in seen.add(results.isCurrent)
        }
        #expect(manager.resultQueue === results.queue)
        try manager.add(URL(string: "http://127.0.0.1:9/b.bin")!)
        await waitUntil("an update was delivered") { seen.count > 0 }
        manager.close()
        #expect(seen.allOnQueue)
    }
}

/// Counts deliveries from any queue, and whether each came where it should.
nonisolated final class LockedCount: Sendable {
    private let state = Locked((count: 0, allOnQueue: true))

    func add(_ onQueue: Bool) {
        state.withLock {
            $0.count += 1
            $0.allOnQueue = $0.allOnQueue && onQueue
        }
    }

    var count: Int { state.current.count }
    var allOnQueue: Bool { state.current.allOnQueue }
}
