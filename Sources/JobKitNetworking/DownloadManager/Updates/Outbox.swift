/// The deliveries waiting for the result queue: events in order, and whether progress changed.
///
/// At most one wake is outstanding: a state change wakes at once; progress alone wakes once the
/// interval since the last delivery has passed. While a delivery runs nothing is woken: its end
/// looks for what arrived meanwhile.
///
/// It also numbers what it hands out, for `updates()`' consumers: every event noted gets the next
/// sequence number, and every delivery begun the next delivery number, so that a consumer can start
/// from a snapshot and take exactly the events after it (`UpdateCut`). Closing asks one last
/// delivery (the `final` one), which ends the consumers.
struct Outbox {
    private var events: [DownloadManager.Event] = []
    private var progressChanged = false
    private enum Scheduled: Equatable {
        case idle
        case now
        case later(UInt64)
    }
    private var scheduled = Scheduled.idle
    private var isDelivering = false
    private var generation: UInt64 = 0
    private var lastDelivery: UInt64?
    /// Events noted so far: the next event's sequence number.
    private(set) var eventsNoted: UInt64 = 0
    /// Events handed out so far: the sequence number of the first event `takeEvents` returns.
    private(set) var eventsTaken: UInt64 = 0
    /// Deliveries begun so far: the number of the delivery under way (or of the last one).
    private(set) var deliveriesBegun: UInt64 = 0
    /// The manager was closed: the next delivery to begin (and every later one) is final.
    private var isClosing = false
    /// A final delivery has begun.
    private var finalBegun = false
    /// The delivery under way carries news for `onUpdate` (events, or progress); a final one asked
    /// by `close()` alone carries none.
    private(set) var hasNews = false
    /// The delivery under way is final.
    private(set) var isFinal = false

    /// Whether events are kept for a delivery. False while nobody observes the manager (no `onUpdate`,
    /// no consumer of `updates()` yet): an event is then numbered and handed out at once, as if
    /// delivered to nobody, so that a batch of 100,000 adds holds no copy of each item. Set true when a
    /// consumer subscribes (from then on, for good); it starts from a snapshot, after every event so far.
    var keepsEvents = true

    var eventCount: Int { events.count }

    /// Queues an event; returns a wake to schedule, if one is needed.
    mutating func note(_ event: DownloadManager.Event) -> DeliveryWake? {
        if keepsEvents {
            events.append(event)
        } else {
            eventsTaken &+= 1
        }
        eventsNoted &+= 1
        guard !isDelivering, scheduled != .now else { return nil }
        scheduled = .now
        return .now
    }

    /// Notes that bytes moved; returns a wake to schedule, if one is needed.
    mutating func noteProgress(now: UInt64, interval: UInt64) -> DeliveryWake? {
        progressChanged = true
        guard !isDelivering, scheduled == .idle else { return nil }
        return scheduleLater(now: now, interval: interval)
    }

    private mutating func scheduleLater(now: UInt64, interval: UInt64) -> DeliveryWake {
        generation += 1
        scheduled = .later(generation)
        let due = (lastDelivery ?? 0) &+ interval
        return .later(generation: generation, afterNanoseconds: due > now ? due - now : 0)
    }

    /// A wake ran: true when it is the current one and no delivery runs (then one starts).
    mutating func begin(_ wake: DeliveryWake, now: UInt64) -> Bool {
        guard !isDelivering else { return false }
        switch (wake, scheduled) {
        case (.now, .now): break
        case (.later(let generation, _), .later(let current)) where generation == current: break
        default: return false
        }
        scheduled = .idle
        isDelivering = true
        hasNews = !events.isEmpty || progressChanged
        isFinal = isClosing
        finalBegun = finalBegun || isClosing
        deliveriesBegun &+= 1
        progressChanged = false
        lastDelivery = now
        return true
    }

    mutating func takeEvents() -> [DownloadManager.Event] {
        defer {
            eventsTaken &+= UInt64(events.count)
            events = []
        }
        return events
    }

    /// The manager closed: wakes the queue for the final delivery (at once, or when the one under way
    /// ends). Later calls do nothing.
    mutating func close() -> DeliveryWake? {
        guard !isClosing else { return nil }
        isClosing = true
        guard !isDelivering, scheduled != .now else { return nil }
        scheduled = .now
        return .now
    }

    /// A delivery ended: what arrived meanwhile wakes the queue again.
    mutating func end(now: UInt64, interval: UInt64) -> DeliveryWake? {
        isDelivering = false
        if !events.isEmpty || (isClosing && !finalBegun) {
            scheduled = .now
            return .now
        }
        if progressChanged { return scheduleLater(now: now, interval: interval) }
        return nil
    }
}
