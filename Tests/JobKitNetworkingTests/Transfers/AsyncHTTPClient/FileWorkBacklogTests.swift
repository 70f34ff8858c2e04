import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The order and batches in which a download's file work reaches the thread pool.
@Suite struct FileWorkBacklogTests {
    @Test func workAddedWhileNothingRunsIsABatchOfItsOwn() {
        var backlog = FileWorkBacklog<String>()

        #expect(backlog.add("head", bytes: 0) == ["head"])
        #expect(backlog.bytes == 0)
    }

    @Test func workAddedWhileABatchRunsWaitsAndFollowsInOrder() {
        var backlog = FileWorkBacklog<String>()
        _ = backlog.add("a", bytes: 10)

        #expect(backlog.add("b", bytes: 20) == nil)
        #expect(backlog.add("c", bytes: 30) == nil)
        #expect(backlog.bytes == 60)
        #expect(backlog.batchFinished() == ["b", "c"])
        #expect(backlog.bytes == 50)
        #expect(backlog.batchFinished() == nil)
        #expect(backlog.bytes == 0)
        #expect(backlog.add("d", bytes: 5) == ["d"])
    }

    @Test func bytesCountWhatWaitsAndWhatIsBeingWritten() {
        var backlog = FileWorkBacklog<Int>()
        _ = backlog.add(1, bytes: 100)
        _ = backlog.add(2, bytes: 50)

        #expect(backlog.bytes == 150)
        _ = backlog.batchFinished()
        #expect(backlog.bytes == 50)
    }
}
