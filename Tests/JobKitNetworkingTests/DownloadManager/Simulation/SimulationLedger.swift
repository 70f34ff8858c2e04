import Foundation

@testable import JobKitNetworking

/// What a schedule must keep, and the checks of it: the files the manager does not own, the completed
/// files, the items added and removed. The simulation tells it what the world and the user did; it
/// judges the disk, the server's versions and the managers after every step.
struct SimulationLedger {
    typealias ItemID = DownloadManager.ItemID

    /// The files no item may touch: planted by the user, or appearing under a name mid-run.
    private var foreign: [String: SimulatedDisk.Entry] = [:]
    /// Completed files, by name: they never change, until removed with their item's `deletingFile`.
    private var completed: [String: [UInt8]] = [:]
    /// Items whose removal the journal recorded: they never come back (by name, for their `.part`s).
    private var removed: [ItemID: String] = [:]
    /// Items removed whose record may not be written yet: a kill before it is may bring them back.
    private var removing: [ItemID: String] = [:]
    /// Every item an `add` returned: no other is ever restored (a failed add leaves no record).
    private var added: Set<ItemID> = []
    /// The journal's replay, checked after every step.
    private var replay = JournalReplay()
    /// Completed files the user edited.
    private var edited: Set<String> = []
    /// `.part`s a power loss left with no record of their item (the journal's last records gone):
    /// nobody's now, so nothing removes them.
    private var orphaned: Set<String> = []

    // MARK: What happened

    mutating func plant(_ name: String, _ entry: SimulatedDisk.Entry) { foreign[name] = entry }

    /// Whether `name` is the user's, or a `.part` a power loss left with no item.
    func isForeign(_ name: String) -> Bool { foreign[name] != nil || orphaned.contains(name) }

    mutating func added(_ ids: [ItemID]) { added.formUnion(ids) }

    mutating func removing(_ id: ItemID, name: String, deletingFile: Bool) {
        removing[id] = name
        if deletingFile { completed[name] = nil }  // removed once the journal says so
    }

    /// The user edits a completed file (a byte more): it is theirs now, never to be replaced.
    mutating func edit(_ name: String, disk: inout SimulatedDisk) -> Bool {
        guard let bytes = completed.removeValue(forKey: name) else { return false }
        foreign[name] = .file(bytes + Array("!".utf8))
        edited.insert(name)
        disk.plant(name, foreign[name]!)
        return true
    }

    /// The process died: the removals the journal on disk records never come back; the others may.
    mutating func killed(journal: Data) {
        let recorded = Set(((try? DownloadJournal.parse(journal))?.entries ?? []).map(\.id))
        removed.merge(removing.filter { !recorded.contains($0.key.rawValue) }) { $1 }
        removing = [:]
    }

    /// The power went: what had not reached the disk is gone. A removal it did not keep may come back
    /// (no removal is synced); with `.process`, a completed file may be missing or short; a file the
    /// user planted or changed since the last commit may be gone or as it was.
    mutating func lostPower(disk: SimulatedDisk, durability: Durability) {
        killed(journal: disk.journal)
        let contents = try? DownloadJournal.parse(disk.journal)
        let recorded = Set((contents?.entries ?? []).map(\.id))
        // Ids past the journal's next one are given again (its last records are gone).
        removed = removed.filter { !recorded.contains($0.key.rawValue) && $0.key.rawValue < contents?.nextID ?? 0 }
        if durability == .process { completed = completed.filter { disk.bytes($0.key) == $0.value } }
        // An edit or a plant the power took back (wholly or in part) is no longer known to be the
        // user's: what is there may be the manager's file come back. A planted `.part` stays the
        // user's as the power left it (nothing may count on it being the manager's).
        for (name, entry) in foreign where disk.entries[name] != entry {
            foreign[name] = edited.contains(name) || !name.hasSuffix(".part") ? nil : disk.entries[name]
        }
        let names = Set((contents?.entries ?? []).map(\.name))
        for name in disk.entries.keys where name.hasSuffix(".part") && !names.contains(String(name.dropLast(5))) {
            orphaned.insert(name)
        }
    }

    // MARK: Checks

    /// After every step: the files, the items, the totals.
    mutating func check(
        disk: SimulatedDisk, server: SimulatedServer, manager: SimulatedManager?, closed: [SimulatedManager]
    ) throws(SimulationFailure) {
        for (name, entry) in foreign where disk.entries[name] != entry && !name.hasSuffix(".part") {
            throw SimulationFailure("a file the manager does not own was touched: \(name)")
        }
        for (name, entry) in foreign where name.hasSuffix(".part") && disk.entries[name] != entry {
            // A planted `.part` may be used (it is under the manager's own name), but never a folder.
            if entry == .directory { throw SimulationFailure("a planted folder \(name) was changed") }
        }
        for (name, bytes) in completed where disk.bytes(name) != bytes {
            throw SimulationFailure("the completed file \(name) was lost or changed")
        }
        for (name, metadata) in disk.metadata {
            guard let total = metadata.total, let part = disk.bytes(String(name.dropLast(5))) else { continue }
            if part.count > total {
                throw SimulationFailure("\(name) says \(total) bytes; its .part has \(part.count)")
            }
        }
        for manager in closed + (manager.map { [$0] } ?? []) {
            if let rule = manager.brokenRules.first { throw SimulationFailure(rule) }
        }
        guard let manager else { return }
        let machine = manager.machine
        for id in machine.ids {
            let item = machine.item(id, now: 0)
            if removed[id] != nil { throw SimulationFailure("the removed item \(id.rawValue) is back") }
            if item.progress.received < 0 { throw SimulationFailure("negative bytes for \(item.name)") }
            if let expected = item.progress.expected, expected > DownloadLimits.maximumLength {
                throw SimulationFailure("\(item.name) expects \(expected) bytes, past the limit")
            }
            if case .completed = item.state, completed[item.name] == nil, foreign[item.name] == nil {
                // Newly completed: it must be one whole version of its resource, never a splice.
                guard let bytes = disk.bytes(item.name) else {
                    throw SimulationFailure("\(item.name) is completed with no file")
                }
                guard server.isVersion(bytes, of: item.url.absoluteString) else {
                    throw SimulationFailure("\(item.name) is completed with bytes of no single version (a splice)")
                }
                if let checksum = item.checksum, Checksum.digest(checksum.algorithm, of: bytes) != checksum {
                    throw SimulationFailure("\(item.name) is completed with bytes its checksum refuses")
                }
                completed[item.name] = bytes
            }
        }
        let totals = machine.summary(now: 0).totals
        if totals.received < 0 || totals.expected < 0 || totals.received > totals.expected
            || totals.receivedOfUnknownLength < 0 || !(0...1).contains(totals.fraction ?? 0)
        {
            throw SimulationFailure("totals out of bounds: \(totals)")
        }
        if let mismatch = replay.mismatch(manager, disk: disk) { throw SimulationFailure(mismatch) }
    }

    /// After a manager opened the folder: only items an `add` returned, with valid names and URLs; no
    /// leftovers of removed or cancelled items, no orphan metadata.
    func checkRestored(disk: SimulatedDisk, manager: SimulatedManager) throws(SimulationFailure) {
        let machine = manager.machine
        try checkLeftParts(disk: disk, manager: manager)
        for id in machine.ids {
            let item = machine.item(id, now: 0)
            guard added.contains(id) else { throw SimulationFailure("item \(id.rawValue), never added, is restored") }
            do {
                try DownloadManager.checkName(item.name)
            } catch {
                throw SimulationFailure("item \(id.rawValue) is restored with the name \(item.name): \(error)")
            }
            let parts = PartNames(for: item.name)
            if disk.facts(parts.metadataTemporary) != .missing {
                throw SimulationFailure("\(parts.metadataTemporary) is left")
            }
            if disk.readMetadata(parts.metadata) != nil, disk.facts(parts.part) == .missing {
                throw SimulationFailure("\(parts.metadata) is left without its .part")
            }
        }
    }

    /// After a manager opened the folder, or closed it having written its journal: no `.part` of a
    /// cancelled or removed item is left.
    func checkLeftParts(disk: SimulatedDisk, manager: SimulatedManager) throws(SimulationFailure) {
        let machine = manager.machine
        var names: Set<String> = []
        for id in machine.ids {
            let item = machine.item(id, now: 0)
            names.insert(item.name)
            let part = PartNames(for: item.name).part
            if case .cancelled = item.state, disk.facts(part) != .missing, !isForeign(part) {
                throw SimulationFailure("the cancelled item \(id.rawValue)'s \(part) is left")
            }
        }
        for name in Set(removed.values).subtracting(names) {
            let part = PartNames(for: name).part
            if disk.facts(part) != .missing, !isForeign(part) {
                throw SimulationFailure("the removed item's \(part) is left")
            }
        }
    }
}

/// An invariant a schedule broke.
struct SimulationFailure: Error {
    var invariant: String
    init(_ invariant: String) { self.invariant = invariant }
}
