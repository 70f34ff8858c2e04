/// The one rule of names in the directory: nothing of a name starts until its previous run has ended
/// and its files are gone.
///
/// A name is *held* while a stopped run of it (suspended, cancelled, removed) has not reported its
/// end — it may still open its `.part` — and while unlinks of its files are under way. Each hold is
/// taken here and released here, once: by the run's end (`runEnded`), or by the executor telling that
/// the unlinks a `Cleanup` asked for are done (`release`). A name is free when it has no hold.
///
/// It also keeps what a stopped run leaves to do when it ends: remove the `.part` of a cancelled or
/// removed item (unless an item of the name holds that `.part` again by then), or — for an item
/// removed as its file took the name — remove that file (`deletingFile`) or the `.part` it left.
///
/// A value behind the manager's lock, like the state machine that owns it.
struct NameGuard {
    /// Files to unlink once the lock is released, and the names whose holds are released once they
    /// are (hand those to `release` then, also when `unlinks` is empty).
    struct Cleanup: Equatable {
        var unlinks: [String] = []
        var names: [String] = []

        mutating func merge(_ other: Cleanup) {
            unlinks += other.unlinks
            names += other.names
        }
    }

    /// What a stopped run leaves to do when it ends.
    private enum AfterEnd {
        case removePart(name: String, paths: [String])
        case removedWhileFinalizing(name: String, deletingFile: Bool)
    }

    /// Holds per name: a name with none is absent.
    private var holds: [String: Int] = [:]
    /// Stopped runs that have not ended, by generation, with their name (each holds it once).
    private var stopping: [UInt64: String] = [:]
    private var afterEnd: [UInt64: AfterEnd] = [:]

    /// No name held.
    init() {}

    /// Whether nothing of `name` may start now.
    func isHeld(_ name: String) -> Bool { holds[name] != nil }

    /// How many holds `name` has (for tests).
    func holdCount(of name: String) -> Int { holds[name, default: 0] }

    /// Whether no name is held: no file of the manager is being unlinked, and no stopped run may still
    /// make one.
    var isEmpty: Bool { holds.isEmpty }

    /// Stopped runs that have not reported their end (for tests of the bound).
    var stoppedRunCount: Int { stopping.count }

    /// Run `generation` of `name` was stopped (its item suspended, cancelled or removed): the name is
    /// held until the run ends. With `removingPart` (cancelled or removed), its end also removes those
    /// files, unless an item of the name holds them again by then.
    mutating func stopped(run generation: UInt64, of name: String, removingPart paths: [String]? = nil) {
        precondition(stopping[generation] == nil, "run \(generation) was stopped already")
        stopping[generation] = name
        hold(name)
        if let paths { afterEnd[generation] = .removePart(name: name, paths: paths) }
    }

    /// The item of `name` is cancelled or removed: a run of the name stopped earlier (its item
    /// suspended, or given a new URL) that has not ended removes `paths` when it ends, as a run
    /// stopped by the cancel or removal does (it may write to the `.part` until then).
    mutating func removePartAfterStoppedRuns(of name: String, _ paths: [String]) {
        for (generation, stopped) in stopping where stopped == name && afterEnd[generation] == nil {
            afterEnd[generation] = .removePart(name: name, paths: paths)
        }
    }

    /// Run `generation` of `name` is renaming its complete `.part` to the name as its item is removed:
    /// the run is left to end, and the name is held until then; its end removes the file when
    /// `deletingFile`, or the `.part` when the run did not get there.
    mutating func removedWhileFinalizing(run generation: UInt64, of name: String, deletingFile: Bool) {
        precondition(afterEnd[generation] == nil, "run \(generation) was stopped already")
        afterEnd[generation] = .removedWhileFinalizing(name: name, deletingFile: deletingFile)
        hold(name)
    }

    /// Whether run `generation` was removed while it renamed its file to the name (and has not ended).
    func isRemovedWhileFinalizing(run generation: UInt64) -> Bool {
        if case .removedWhileFinalizing? = afterEnd[generation] { return true }
        return false
    }

    /// Holds `name` until `paths` are unlinked: the returned cleanup asks for that.
    mutating func clean(_ name: String, _ paths: [String]) -> Cleanup {
        hold(name)
        return Cleanup(unlinks: paths, names: [name])
    }

    /// A run that is no longer its item's current one ended (`completed`: its file took the name).
    /// Returns what its stop left to do; `isHeldAgain` tells whether an item of a name holds its
    /// `.part` again (resumed or added again and not cancelled): that `.part` is kept.
    mutating func runEnded(_ generation: UInt64, completed: Bool, isHeldAgain: (String) -> Bool) -> Cleanup {
        var cleanup = Cleanup()
        // Released once this cleanup's unlinks (if any) are done.
        if let name = stopping.removeValue(forKey: generation) { cleanup.names.append(name) }
        switch afterEnd.removeValue(forKey: generation) {
        case nil:
            break
        case .removePart(let name, let paths):
            if !isHeldAgain(name) { cleanup.merge(clean(name, paths)) }
        case .removedWhileFinalizing(let name, let deletingFile):
            if completed {
                if deletingFile { cleanup.unlinks.append(name) }
            } else {
                let parts = PartNames(for: name)
                cleanup.unlinks += [parts.part, parts.metadata]
            }
            // Its hold, taken by `removedWhileFinalizing`, is released once these unlinks are done.
            cleanup.names.append(name)
        }
        return cleanup
    }

    /// The unlinks of a cleanup are done: one hold of each of `names` is released.
    mutating func release(_ names: [String]) {
        for name in names {
            guard let count = holds[name] else { continue }
            holds[name] = count > 1 ? count - 1 : nil
        }
    }

    /// The manager closes: the `.part`s stopped runs were to remove when they end, to remove now
    /// (unless `isHeldAgain`) — also the `.part` of a run removed while finalizing, whose rename may
    /// still fail (a folder under the name): its end comes too late to remove it, and the journal
    /// forgets the item. The file under the name is left: the rename may not have happened, and what
    /// is there may be somebody else's. The runs' later ends do nothing. The holds stay: nothing
    /// starts any more.
    mutating func close(isHeldAgain: (String) -> Bool) -> [String] {
        var unlinks: [String] = []
        for (_, after) in afterEnd {
            switch after {
            case .removePart(let name, let paths) where !isHeldAgain(name): unlinks += paths
            case .removedWhileFinalizing(let name, _) where !isHeldAgain(name):
                let parts = PartNames(for: name)
                unlinks += [parts.part, parts.metadata]
            default: break
            }
        }
        afterEnd = [:]
        stopping = [:]
        return unlinks
    }

    private mutating func hold(_ name: String) {
        holds[name, default: 0] += 1
    }
}
