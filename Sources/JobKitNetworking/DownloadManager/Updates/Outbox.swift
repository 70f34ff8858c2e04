/// The deliveries waiting for the result queue: events in order, and whether progress changed.
///
/// At most one wake is outstanding: a state change wakes at once; progress alone wakes once the
/// interval since the last delivery has passed. While a delivery runs nothing is woken: its end
/// looks for what arrived meanwhile.
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

    var eventCount: Int { events.count }

    /// Queues an event; returns a wake to schedule, if one is needed.
    mutating func note(_ event: DownloadManager.Event) -> DeliveryWake? {
        events.append(event)
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
        progressChanged = false
        lastDelivery = now
        return true
    }

    mutating func takeEvents() -> [DownloadManager.Event] {
        defer { events = [] }
        return events
    }

    /// A delivery ended: what arrived meanwhile wakes the queue again.
    mutating func end(now: UInt64, interval: UInt64) -> DeliveryWake? {
        isDelivering = false
        if !events.isEmpty {
            scheduled = .now
            return .now
        }
        if progressChanged { return scheduleLater(now: now, interval: interval) }
        return nil
    }
}
