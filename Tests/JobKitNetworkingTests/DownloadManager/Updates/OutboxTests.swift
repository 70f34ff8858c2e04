import Testing

@testable import JobKitNetworking

/// The download manager's outbox alone: events in order, progress coalesced, one wake at a time.
@Suite struct OutboxTests {
    let interval: UInt64 = 100

    func event(_ count: Int) -> DownloadManager.Event {
        .allFinished(DownloadManager.Summary(items: [], totals: .init(received: Int64(count))))
    }

    @Test func anEmptyOutboxWakesNothingAndDeliversNothing() {
        var outbox = Outbox()
        #expect(outbox.eventCount == 0)
        let began = outbox.begin(.now, now: 0)
        #expect(!began, "a wake that was not asked for is stale")
        let events = outbox.takeEvents()
        let wake = outbox.end(now: 0, interval: interval)
        #expect(events.isEmpty && wake == nil)
    }

    @Test func oneEventWakesAtOnceAndIsDeliveredOnce() {
        var outbox = Outbox()
        let wake = outbox.note(event(1))
        let began = outbox.begin(.now, now: 5)
        let events = outbox.takeEvents()
        let next = outbox.end(now: 6, interval: interval)
        let again = outbox.begin(.now, now: 7)
        #expect(wake == .now && began && events == [event(1)] && next == nil)
        #expect(!again, "delivered: the wake is spent")
    }

    @Test func manyEventsShareOneWakeAndKeepTheirOrder() {
        var outbox = Outbox()
        var wakes: [DeliveryWake] = []
        for count in 0..<100_000 { if let wake = outbox.note(event(count)) { wakes.append(wake) } }
        #expect(wakes == [.now])
        let began = outbox.begin(.now, now: 1)
        let events = outbox.takeEvents()
        #expect(began && events == (0..<100_000).map(event))
        #expect(outbox.eventCount == 0, "delivered events are not kept")
    }

    /// Nobody observes the manager (no `onUpdate`, no consumer yet): 100,000 events keep nothing, and
    /// a consumer that comes later takes exactly the events after it.
    @Test func unobservedEventsAreNumberedButNotKept() {
        var outbox = Outbox()
        outbox.keepsEvents = false
        for count in 0..<100_000 { _ = outbox.note(event(count)) }
        #expect(outbox.eventCount == 0 && outbox.eventsNoted == 100_000 && outbox.eventsTaken == 100_000)
        outbox.keepsEvents = true
        _ = outbox.note(event(7))
        let began = outbox.begin(.now, now: 1)
        let taken = outbox.eventsTaken
        #expect(began && taken == 100_000 && outbox.takeEvents() == [event(7)])
    }

    @Test func progressAloneWakesOnceTheIntervalHasPassed() {
        var outbox = Outbox()
        let first = outbox.noteProgress(now: 0, interval: interval)
        let coalesced = outbox.noteProgress(now: 1, interval: interval)
        #expect(first == .later(generation: 1, afterNanoseconds: 100) && coalesced == nil)
        let began = outbox.begin(first!, now: 100)
        let ended = outbox.end(now: 101, interval: interval)
        #expect(began && ended == nil)
        let next = outbox.noteProgress(now: 130, interval: interval)
        #expect(next == .later(generation: 2, afterNanoseconds: 70), "due 100 after the delivery at 100")
    }

    @Test func aStateChangeOvertakesWaitingProgressAndTheLaterWakeGoesStale() {
        var outbox = Outbox()
        let later = outbox.noteProgress(now: 0, interval: interval)!
        let wake = outbox.note(event(1))
        let began = outbox.begin(.now, now: 1)
        _ = outbox.takeEvents()
        let ended = outbox.end(now: 2, interval: interval)
        let stale = outbox.begin(later, now: 3)
        #expect(wake == .now && began)
        #expect(ended == nil, "the delivery took the progress too")
        #expect(!stale)
    }

    @Test func whatArrivesDuringADeliveryWakesWhenItEnds() {
        var outbox = Outbox()
        _ = outbox.note(event(1))
        _ = outbox.begin(.now, now: 1)
        _ = outbox.takeEvents()
        let during = outbox.note(event(2))
        let second = outbox.begin(.now, now: 2)
        #expect(during == nil, "no wake while a delivery runs")
        #expect(!second, "one delivery at a time")
        let ended = outbox.end(now: 3, interval: interval)
        let began = outbox.begin(.now, now: 4)
        let events = outbox.takeEvents()
        #expect(ended == .now && began && events == [event(2)])
        let progress = outbox.noteProgress(now: 5, interval: interval)
        let last = outbox.end(now: 6, interval: interval)
        #expect(progress == nil && last == .later(generation: 1, afterNanoseconds: 98))
    }

    @Test func eventsAndDeliveriesAreNumberedForTheConsumers() {
        var outbox = Outbox()
        for count in 0..<3 { _ = outbox.note(event(count)) }
        #expect(outbox.eventsNoted == 3 && outbox.eventsTaken == 0 && outbox.deliveriesBegun == 0)
        let began = outbox.begin(.now, now: 1)
        let events = outbox.takeEvents()
        #expect(began && events.count == 3 && outbox.hasNews && !outbox.isFinal)
        #expect(outbox.eventsTaken == 3 && outbox.deliveriesBegun == 1)
        _ = outbox.end(now: 2, interval: interval)
        _ = outbox.note(event(3))
        #expect(outbox.eventsNoted == 4 && outbox.eventsTaken == 3, "the next delivery's first event is number 3")
    }

    @Test func closingAsksOneFinalDeliveryWithNoNews() {
        var outbox = Outbox()
        let wake = outbox.close()
        let again = outbox.close()
        #expect(wake == .now && again == nil)
        let began = outbox.begin(.now, now: 1)
        #expect(began && outbox.isFinal && !outbox.hasNews, "onUpdate does not get it")
        #expect(outbox.end(now: 2, interval: interval) == nil, "one final delivery")
    }

    @Test func closingDuringADeliveryWakesAgainWhenItEnds() {
        var outbox = Outbox()
        _ = outbox.note(event(1))
        _ = outbox.begin(.now, now: 1)
        _ = outbox.takeEvents()
        #expect(outbox.close() == nil && !outbox.isFinal, "the delivery under way began before the close")
        #expect(outbox.end(now: 2, interval: interval) == .now)
        let began = outbox.begin(.now, now: 3)
        #expect(began && outbox.isFinal)
    }
}
