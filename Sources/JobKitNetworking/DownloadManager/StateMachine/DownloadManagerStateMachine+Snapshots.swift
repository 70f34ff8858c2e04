import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Snapshots

    /// The item `id` now.
    func item(_ id: ItemID, now: UInt64) -> DownloadManager.Item {
        let entry = items[id]!
        let received = entry.receivedNow
        var progress = DownloadManager.ByteProgress(received: received, expected: entry.expected)
        if case .running = entry.phase {
            progress.bytesPerSecond = entry.meter.rate(entry.transferredNow, at: now)
            if let expected = entry.expected, progress.bytesPerSecond > 0 {
                progress.secondsRemaining =
                    Double(max(expected.subtractingSaturating(received), 0)) / progress.bytesPerSecond
            }
        }
        return DownloadManager.Item(
            id: id, url: entry.url, name: entry.name, directory: directory, checksum: entry.checksum,
            state: state(of: entry), progress: progress)
    }

    /// The item `id` now, if there is one.
    func itemIfAny(_ id: ItemID, now: UInt64) -> DownloadManager.Item? {
        items[id] == nil ? nil : item(id, now: now)
    }

    /// Every item and the totals now; notes the byte counts for the speeds.
    mutating func snapshot(now: UInt64) -> (items: [DownloadManager.Item], totals: DownloadManager.Totals) {
        totalMeter.record(totalTransferredNow, at: now)
        let ids = items.ids
        for id in ids {
            guard case .running = items[id]?.phase else { continue }
            items.update(id) { $0.meter.record($0.transferredNow, at: now) }
        }
        let snapshot = ids.map { item($0, now: now) }
        return (snapshot, totals(of: snapshot, now: now))
    }

    func totals(of items: [DownloadManager.Item], now: UInt64) -> DownloadManager.Totals {
        var totals = DownloadManager.Totals()
        /// The bytes the active items still need.
        var left: Int64 = 0
        for item in items {
            switch item.state {
            case .pending: totals.pending += 1
            case .running, .verifying: totals.running += 1
            case .suspended: totals.suspended += 1
            case .completed: totals.completed += 1
            case .failed: totals.failed += 1
            case .cancelled: totals.cancelled += 1
            }
            switch item.state {
            case .failed, .cancelled: continue
            default: break
            }
            // `received` and `expected` add up the same items, so that one never outgrows the other.
            // Saturating: the numbers come from servers (a lying `Content-Length` is refused by the
            // download, but its sum with others may still be past `Int64.max`).
            if let expected = item.progress.expected {
                totals.received = totals.received.addingSaturating(item.progress.received)
                totals.expected = totals.expected.addingSaturating(expected)
                if item.state.isActive {
                    left = left.addingSaturating(max(expected.subtractingSaturating(item.progress.received), 0))
                }
            } else {
                totals.receivedOfUnknownLength = totals.receivedOfUnknownLength.addingSaturating(
                    item.progress.received)
                if item.state.isActive { totals.itemsOfUnknownLength += 1 }
            }
        }
        totals.bytesPerSecond = totalMeter.rate(totalTransferredNow, at: now)
        if totals.itemsOfUnknownLength == 0, totals.bytesPerSecond > 0 {
            totals.secondsRemaining = Double(left) / totals.bytesPerSecond
        }
        return totals
    }

    func summary(now: UInt64) -> DownloadManager.Summary {
        let snapshot = items.ids.map { item($0, now: now) }
        return DownloadManager.Summary(items: snapshot, totals: totals(of: snapshot, now: now))
    }

    var activeCount: Int { scheduler.activeCount }

    // MARK: Delivery

    /// A woken delivery starts: the events and the snapshot to hand to `onUpdate`, or nil when the
    /// wake is stale or a delivery is under way.
    mutating func beginDelivery(_ wake: Wake, now: UInt64) -> DownloadManager.Update? {
        beginNumberedDelivery(wake, now: now)?.delivery.update
    }

    /// `beginDelivery`, numbered for `updates()`' consumers; `hasNews` is false for a final delivery
    /// asked by `close()` alone (`onUpdate` does not get it). Without `snapshot` (nobody takes the
    /// delivery) its update has no items and zero totals, and the speeds are not noted: nobody
    /// shows them.
    mutating func beginNumberedDelivery(_ wake: Wake, now: UInt64, snapshot wanted: Bool = true) -> (
        delivery: UpdateDelivery, hasNews: Bool
    )? {
        guard outbox.begin(wake, now: now) else { return nil }
        // Before the counts are read: a chunk counted from now on tells the manager again.
        progress.setDeliveryWaiting(false)
        let firstEvent = outbox.eventsTaken
        let events = outbox.takeEvents()
        let (items, totals) = wanted ? snapshot(now: now) : ([], DownloadManager.Totals())
        let update = DownloadManager.Update(events: events, items: items, totals: totals)
        return (
            .init(update: update, number: outbox.deliveriesBegun, firstEvent: firstEvent, isFinal: outbox.isFinal),
            outbox.hasNews
        )
    }

    /// Where a consumer of `updates()` starts now: a snapshot of every item (no events) and the
    /// deliveries and events it already holds; nil once closed (its sequence ends at once).
    mutating func updateStart(now: UInt64) -> (update: DownloadManager.Update, cut: UpdateCut)? {
        guard !isClosed else { return nil }
        outbox.keepsEvents = true
        let summary = summary(now: now)
        return (
            DownloadManager.Update(events: [], items: summary.items, totals: summary.totals),
            .init(deliveriesBefore: outbox.deliveriesBegun, eventsBefore: outbox.eventsNoted)
        )
    }

    /// The delivery ended: when to wake again, if anything waits.
    mutating func endDelivery(now: UInt64) -> Wake? {
        outbox.end(now: now, interval: interval)
    }

    /// How many events wait for delivery (for tests).
    var undeliveredEventCount: Int { outbox.eventCount }
}
