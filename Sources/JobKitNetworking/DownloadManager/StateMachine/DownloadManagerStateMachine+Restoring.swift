import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Restoring

    /// The items of a journal, as `JournalRecovery` judged them against the disk;
    /// `partLengths` gives the bytes already in an item's `.part`.
    mutating func restore(_ contents: DownloadJournal.Contents, partLengths: [UInt64: Int64], now: UInt64) -> Actions {
        items.reserveIDs(below: contents.nextID)
        var actions = Actions()
        for restored in contents.entries {
            let id = ItemID(rawValue: restored.id)
            var entry = Entry(
                id: id, url: restored.url, name: restored.name, host: Self.host(of: restored.url),
                checksum: restored.checksum, phase: .cancelled, meter: SpeedMeter(window: window),
                ownsFile: restored.ownsFile)
            entry.received = partLengths[restored.id] ?? 0
            entry.mayHavePart = partLengths[restored.id] != nil
            switch restored.status {
            case .pending, .finishing: entry.phase = startsRestored ? .pending(ticket: 0) : .held
            case .suspended: entry.phase = .suspended
            case .cancelled: entry.phase = .cancelled
            case .failed(let failure): entry.phase = .failed(failure)
            case .completed(let size):
                entry.phase = .completed(size: size)
                entry.received = size
                entry.expected = size
            }
            let pending: Bool
            if case .pending = entry.phase { pending = true } else { pending = false }
            items.insert(entry)
            if pending {
                enqueue(id)
            }
            actions.wake(outbox.note(.changed(item(id, now: now))))
        }
        claimStarts(now: now, into: &actions)
        return actions
    }
}
