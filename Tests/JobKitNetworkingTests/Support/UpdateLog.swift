import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// Everything a manager delivered, in order, recorded on its own serial result queue.
final class UpdateLog: Sendable {
    let queue = DispatchQueue(label: "UpdateLog")
    private let updates = LockedBox<[DownloadManager.Update]>.make([])
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

    var all: [DownloadManager.Update] { updates.withLock { $0 } }
    var events: [DownloadManager.Event] { all.flatMap(\.events) }
    /// How many deliveries ran while another one was running (must be 0).
    var overlaps: Int { overlapping.withLock { $0.overlaps } }

    /// The states item `id` went through, in order.
    func states(of id: DownloadManager.ItemID) -> [DownloadManager.State] {
        events.compactMap { event in
            if case .changed(let item) = event, item.id == id { return item.state }
            return nil
        }
    }

    var summaries: [DownloadManager.Summary] {
        events.compactMap { event in
            if case .allFinished(let summary) = event { return summary }
            return nil
        }
    }

    /// Waits until `condition` holds for the updates so far (polling; 20 s at most).
    func wait(
        until condition: @escaping @Sendable ([DownloadManager.Update]) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let deadline = Date().addingTimeInterval(20)
        while !condition(all) {
            guard Date() < deadline else {
                Issue.record("timed out waiting for updates", sourceLocation: sourceLocation)
                return
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits until item `id` has reached `state`.
    func wait(
        for id: DownloadManager.ItemID, toBe state: DownloadManager.State,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await wait(until: { _ in self.states(of: id).contains(state) }, sourceLocation: sourceLocation)
    }

    /// Waits until the queue drains after the updates it had.
    func waitForDrain(count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async {
        await wait(until: { _ in self.summaries.count >= count }, sourceLocation: sourceLocation)
    }
}
