import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// Everything a manager delivered, in order, recorded on its own serial result queue.
final class UpdateLog: Sendable {
    let queue = DispatchQueue(label: "UpdateLog")
    private let updates = Watched<[DownloadManager.Update]>([])
    private let overlapping = LockedBox<(inside: Bool, overlaps: Int)>.make((false, 0))
    /// Runs in every delivery, before it is recorded (a test can make the result queue busy).
    let onDelivery: @Sendable (DownloadManager.Update) -> Void

    init(onDelivery: @escaping @Sendable (DownloadManager.Update) -> Void = { _ in }) {
        self.onDelivery = onDelivery
    }

    /// The handler to give the manager.
    var handler: @Sendable (DownloadManager.Update) -> Void {
        { [self] update in
            overlapping.withLock { state in
                if state.inside { state.overlaps += 1 }
                state.inside = true
            }
            onDelivery(update)
            updates.withLock { $0.append(update) }
            overlapping.withLock { $0.inside = false }
        }
    }

    var all: [DownloadManager.Update] { updates.current }
    var events: [DownloadManager.Event] { all.flatMap(\.events) }
    /// How many deliveries ran while another one was running (must be 0).
    var overlaps: Int { overlapping.withLock { $0.overlaps } }

    /// The states item `id` went through, in order.
    func states(of id: DownloadManager.ItemID) -> [DownloadManager.State] { Self.states(of: id, in: all) }

    var summaries: [DownloadManager.Summary] { Self.summaries(in: all) }

    /// The states item `id` went through in `updates`, in order.
    static func states(
        of id: DownloadManager.ItemID, in updates: [DownloadManager.Update]
    ) -> [DownloadManager.State] {
        updates.flatMap(\.events).compactMap { event in
            if case .changed(let item) = event, item.id == id { return item.state }
            return nil
        }
    }

    /// The notices that the queue drained in `updates`, in order.
    static func summaries(in updates: [DownloadManager.Update]) -> [DownloadManager.Summary] {
        updates.flatMap(\.events).compactMap { event in
            if case .allFinished(let summary) = event { return summary }
            return nil
        }
    }

    /// Suspends until `condition` holds for the updates so far, resumed by the delivery that makes
    /// it true (see `Watched.until`): the condition looks at the updates it is given, never at the log.
    func wait(
        until condition: @escaping @Sendable ([DownloadManager.Update]) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await updates.until("the updates meet the condition", sourceLocation: sourceLocation, condition)
    }

    /// Waits until item `id` has reached `state`.
    func wait(
        for id: DownloadManager.ItemID, toBe state: DownloadManager.State,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await wait(until: { Self.states(of: id, in: $0).contains(state) }, sourceLocation: sourceLocation)
    }

    /// Waits until the queue drained `count` times (a notice each).
    func waitForDrain(count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async {
        await wait(until: { Self.summaries(in: $0).count >= count }, sourceLocation: sourceLocation)
    }
}
