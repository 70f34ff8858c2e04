import Testing

@testable import JobKitNetworking

@Suite struct SplitStateTests {
    private func running(length: Int64 = 4 << 20) -> SplitState {
        var state = SplitState()
        state.phase = .running
        state.metadata = PartMetadata(url: "http://example.test/f", segments: SegmentMap.split(length: length, into: 4))
        return state
    }

    @Test func nothingIsRecordedUnlessTheSplitRuns() {
        var state = SplitState()
        let recorded = state.record(10, in: 0, syncs: true, syncInterval: 1, persistInterval: 1)
        #expect(recorded.persist == nil && recorded.progress == nil && recorded.sync == nil)
    }

    @Test func theMapIsDueEachPersistIntervalAndProgressEachThousandth() {
        var state = running()
        var persisted = 0
        var reports = 0
        for step in 0..<64 {
            let recorded = state.record(
                64 << 10, in: step / 16, syncs: false, syncInterval: 1, persistInterval: 1 << 20)
            if recorded.persist != nil { persisted += 1 }
            if recorded.progress != nil { reports += 1 }
            #expect(recorded.sync == nil, "no flush without .system")
        }
        #expect(persisted == 4 && reports == 64)
        #expect(state.metadata?.segments?.isComplete == true)
    }

    @Test func aFlushIsDueEachSyncIntervalAndOnlyTheNewestIsRecorded() throws {
        var state = running()
        let first = try #require(
            state.record(1 << 20, in: 0, syncs: true, syncInterval: 1 << 20, persistInterval: 1 << 30).sync)
        let second = try #require(
            state.record(1 << 20, in: 1, syncs: true, syncInterval: 1 << 20, persistInterval: 1 << 30).sync)
        let recorded = state.recordSync(second)
        let late = state.recordSync(first)
        #expect(recorded?.syncedSegments == second.map)
        #expect(late == nil, "an older flush finishing later changes nothing")
        state.phase = .stopped
        let stopped = state.recordSync(second)
        #expect(stopped == nil)
    }

    @Test func onlyTheNewestMapIsWrittenAndNoneOnceStopped() {
        var state = running()
        let older = state.takeTicket()
        let newer = state.takeTicket()
        let newest = state.mayWrite(newer)
        let stale = state.mayWrite(older)
        #expect(newest && !stale)
        let last = state.takeTicket()
        state.phase = .stopped
        let afterStop = state.mayWrite(last)
        #expect(!afterStop)
    }
}
