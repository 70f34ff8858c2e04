import JobKit
import Observation

/// A download manager's items as an `@Observable` model, for SwiftUI and any other observation:
/// the rows, seed 002's two lists (`inProgress` and `completed`, newest first) and the totals, with
/// the controls.
///
/// **Threading.** Main actor only: it is created, read and controlled on the main actor, and its
/// properties change there, at most ten times a second (`refreshInterval`): it consumes the
/// manager's `updates()` in a task of its own, taking each update as it comes, and shows what it
/// took at once when the interval since the last change has passed, else when it passes (events
/// are never lost; progress is merged into the newest snapshot). It keeps the manager until the
/// manager is closed, and sees the close at once, whatever the interval (then it shows the last
/// update, `isClosed` is true, the controls throw `DownloadManagerError.closed` and the manager is
/// released); releasing the list stops its task.
///
/// ```swift
/// let list = DownloadList(manager)          // on the main actor
/// for item in list.inProgress { print(item.name, item.state, item.percent ?? 0) }
/// try list.suspend(list.inProgress[0].id)
/// ```
@MainActor
@Observable
public final class DownloadList {
    /// Every item, in the order added, as of the latest update.
    public private(set) var items: [DownloadManager.Item] = []
    /// The items that are not completed (pending, running, verifying, suspended, failed,
    /// cancelled), in the order added: seed 002's "downloading" list.
    public private(set) var inProgress: [DownloadManager.Item] = []
    /// The completed items, the most recently completed first (items that were already completed
    /// when the list was made come after, the newest id first).
    public private(set) var completed: [DownloadManager.Item] = []
    /// Every item added up, as of the latest update.
    public private(set) var totals = DownloadManager.Totals()
    /// The manager was closed (or released): the list no longer changes.
    public private(set) var isClosed = false
    /// The shortest time between two changes of the list.
    public let refreshInterval: Duration

    /// Every update taken; the properties show it (`show`) at most once per `refreshInterval`.
    @ObservationIgnored private var model = DownloadListModel()
    /// When the properties last showed the model; nil before the first update.
    @ObservationIgnored private var shown: ContinuousClock.Instant?
    /// Shows the model once the interval since `shown` has passed: the updates taken meanwhile are
    /// in the model, and wait for it.
    @ObservationIgnored private var scheduledShow: Task<Void, Never>?
    /// Nil once the manager is closed: the list does not keep it alive then.
    @ObservationIgnored private var manager: DownloadManager?
    /// The task consuming the updates; cancelled when the list is released.
    private let task = LockedBox<Task<Void, Never>?>.make(nil)

    /// A list of `manager`'s items, filled at once with every item as it is now, then kept up to
    /// date from `manager.updates()`.
    ///
    /// - Parameters:
    ///   - manager: the manager to show and control.
    ///   - refreshInterval: the shortest time between two changes of the list (a tenth of a second:
    ///     at most ten a second); progress in between is merged, events are kept.
    public init(_ manager: DownloadManager, refreshInterval: Duration = .milliseconds(100)) {
        self.manager = manager
        self.refreshInterval = refreshInterval
        let iterator = manager.updates().makeAsyncIterator()
        // Filled now, for a first frame; the iterator's snapshot (a moment later) replaces it.
        model.apply(DownloadManager.Update(events: [], items: manager.items, totals: manager.totals))
        show()
        shown = nil
        // The task holds the iterator (its consumer's buffer), not the manager, and the list weakly.
        // It never sleeps: waiting for the next update, it sees the end of them (the close) at once.
        task.withLock {
            $0 = Task { [weak self] in
                var iterator = iterator
                while let update = await iterator.next() {
                    guard self?.take(update) == true else { return }
                }
                self?.endOfUpdates()
            }
        }
    }

    deinit {
        task.withLock { $0 }?.cancel()
        scheduledShow?.cancel()
    }

    /// Takes an update into the model, and shows it now if the interval since the last change has
    /// passed, else once it passes. False once the list is gone.
    private func take(_ update: DownloadManager.Update) -> Bool {
        model.apply(update)
        guard scheduledShow == nil else { return true }  // shows this update too, when it is time
        let now = ContinuousClock.now
        guard let shown, now < shown + refreshInterval else {
            show()
            return true
        }
        let due = shown + refreshInterval
        scheduledShow = Task { [weak self] in
            try? await Task.sleep(until: due, clock: .continuous)
            // Cancelled: the updates ended, and `endOfUpdates` showed the model.
            guard !Task.isCancelled, let self else { return }
            scheduledShow = nil
            show()
        }
        return true
    }

    /// Sets the observed properties from the model (those that changed).
    private func show() {
        shown = ContinuousClock.now
        if items != model.items { items = model.items }
        let inProgress = model.inProgress
        if self.inProgress != inProgress { self.inProgress = inProgress }
        let completed = model.completed
        if self.completed != completed { self.completed = completed }
        if totals != model.totals { totals = model.totals }
    }

    /// The manager was closed: the list shows the last updates and lets it go.
    private func endOfUpdates() {
        scheduledShow?.cancel()
        scheduledShow = nil
        show()
        manager = nil
        isClosed = true
    }

    // MARK: Controls

    /// Suspends the item: `DownloadManager.suspend(_:)`.
    ///
    /// - Throws: the manager's error; `DownloadManagerError.closed` once it is closed.
    public func suspend(_ id: DownloadManager.ItemID) throws(DownloadManagerError) {
        try open().suspend(id)
    }

    /// Queues the item again: `DownloadManager.resume(_:)`.
    ///
    /// - Throws: the manager's error; `DownloadManagerError.closed` once it is closed.
    public func resume(_ id: DownloadManager.ItemID) throws(DownloadManagerError) {
        try open().resume(id)
    }

    /// Cancels the item: `DownloadManager.cancel(_:)`.
    ///
    /// - Throws: the manager's error; `DownloadManagerError.closed` once it is closed.
    public func cancel(_ id: DownloadManager.ItemID) throws(DownloadManagerError) {
        try open().cancel(id)
    }

    /// Removes the item: `DownloadManager.remove(_:deletingFile:)`.
    ///
    /// - Throws: the manager's error; `DownloadManagerError.closed` once it is closed.
    public func remove(_ id: DownloadManager.ItemID, deletingFile: Bool = false) throws(DownloadManagerError) {
        try open().remove(id, deletingFile: deletingFile)
    }

    private func open() throws(DownloadManagerError) -> DownloadManager {
        guard let manager else { throw .closed }
        return manager
    }
}
