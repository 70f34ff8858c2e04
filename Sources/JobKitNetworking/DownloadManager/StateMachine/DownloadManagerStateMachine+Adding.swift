import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Adding

    /// Checks `requests` against each other and the items; nothing changes (ids are taken from
    /// the table's next id without moving it: `commit` does).
    func prepare(_ requests: [DownloadManager.Request]) throws(DownloadManagerError) -> [Prepared] {
        guard !isClosed else { throw .closed }
        var prepared: [Prepared] = []
        var batch: [String: (id: ItemID, request: DownloadManager.Request)] = [:]
        var id = items.nextID
        for request in requests {
            try Self.checkDownloadable(request.url)
            let name: String
            if let given = request.name { name = given } else { name = try Self.defaultName(for: request.url) }
            try DownloadManager.checkName(name)
            guard request.headers.count <= DownloadManager.Header.maximumCount else {
                throw .invalidHeader(
                    request.headers[DownloadManager.Header.maximumCount].name,
                    reason: "a request has at most \(DownloadManager.Header.maximumCount) headers")
            }
            let replacing = request.replacesExistingFile
            let headers = request.headers
            let connections = request.effectiveConnections
            // A name an earlier request of the batch took (a new item, or one downloaded again): the
            // same request again is that item; another is refused.
            if let earlier = batch[name] {
                guard earlier.request.url == request.url, earlier.request.checksum == request.checksum else {
                    throw .nameTaken(name, by: earlier.id)
                }
                prepared.append(.existing(earlier.id, replacing: replacing, headers: headers, connections: connections))
                continue
            }
            if let entry = items.entry(named: name) {
                if entry.url == request.url, entry.checksum == request.checksum {
                    prepared.append(
                        .existing(entry.id, replacing: replacing, headers: headers, connections: connections))
                    continue
                }
                // A completed file of another URL that the request may replace (aria2's
                // `--allow-overwrite`): downloaded again, its record kept until the new file has the name.
                guard replacing, entry.checksum == request.checksum, case .completed = entry.phase else {
                    throw .nameTaken(name, by: entry.id)
                }
                batch[name] = (entry.id, request)
                prepared.append(.again(entry.id, url: request.url, headers: headers, connections: connections))
                continue
            }
            // Ids count up to the journal's limit (2⁶²): reached only from a planted journal.
            guard id < DownloadJournal.maximumID else {
                throw .cannotUseDirectory(directory.path, reason: "its journal has used every item id")
            }
            batch[name] = (ItemID(rawValue: id), request)
            prepared.append(
                .new(
                    id: ItemID(rawValue: id), url: request.url, name: name, checksum: request.checksum,
                    replacing: replacing, headers: headers, connections: connections))
            id += 1
        }
        return prepared
    }

    /// The journal records of prepared requests (new items only).
    static func records(of prepared: [Prepared]) -> some Sequence<DownloadJournal.Record> {
        prepared.lazy.compactMap { item in
            guard case .new(let id, let url, let name, let checksum, _, _, _) = item else { return nil }
            return .add(id.rawValue, url: url, name: name, checksum: checksum)
        }
    }

    /// Adds what `prepare` validated (and the journal recorded): new items are pending; an existing
    /// item that failed, was cancelled or is held is queued again. Returns the ids, one per request.
    mutating func commit(_ prepared: [Prepared], now: UInt64) -> (ids: [ItemID], actions: Actions) {
        var actions = Actions()
        var ids: [ItemID] = []
        ids.reserveCapacity(prepared.count)
        items.reserve(prepared.count)
        for item in prepared {
            switch item {
            case .new(let id, let url, let name, let checksum, let replacing, let headers, let connections):
                if items[id] != nil {
                    items.update(id) {
                        if replacing { $0.replacesFile = true }
                        $0.headers = headers
                        $0.connections = connections
                    }
                    ids.append(id)  // the same request twice in one batch
                    continue
                }
                // A name held by a stopped run of a removed item: that run's end leaves its `.part`
                // to this item (`NameGuard.runEnded`), which may be removed before it runs.
                items.insert(
                    Entry(
                        id: id, url: url, name: name, host: Self.host(of: url),
                        checksum: checksum, phase: .cancelled, meter: SpeedMeter(window: window),
                        replacesFile: replacing, headers: headers, connections: connections,
                        mayHavePart: nameGuard.isHeld(name)))
                journal.noteWritten(1)
                enqueue(id)
                actions.wake(outbox.note(.changed(self.item(id, now: now))))
                ids.append(id)
            case .again(let id, let url, let headers, let connections):
                ids.append(id)
                items.update(id) {
                    $0.headers = headers
                    $0.connections = connections
                }
                actions.merge(fetchAgain(id, from: url, now: now))
            case .existing(let id, let replacing, let headers, let connections):
                ids.append(id)
                guard let entry = items[id] else { continue }
                items.update(id) {
                    if replacing { $0.replacesFile = true }
                    $0.headers = headers
                    $0.connections = connections
                }
                switch entry.phase {
                case .failed, .cancelled, .held: actions.merge(requeue(id, now: now))
                default: break
                }
            }
        }
        claimStarts(now: now, into: &actions)
        return (ids, actions)
    }
}
