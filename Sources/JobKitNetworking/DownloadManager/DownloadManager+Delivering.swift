import Dispatch
import Foundation
import JobKit

extension DownloadManager {
    // MARK: Delivering

    /// Wakes the result queue for a delivery, now or after the delay the state machine asked.
    func schedule(_ wake: DeliveryWake?) {
        guard let wake else { return }
        switch wake {
        case .now:
            resultQueue.async { [self] in deliver(wake) }
        case .later(_, let delay):
            let resultQueue = self.resultQueue
            configuration.scheduler.schedule(after: .nanoseconds(Int64(clamping: delay))) { [self] in
                resultQueue.async { self.deliver(wake) }
            }
        }
    }

    /// On the result queue: hands the events and the snapshot to the consumers of `updates()` and
    /// to `onUpdate` (unless the wake is stale), then schedules what arrived meanwhile. With neither,
    /// the snapshot is not made.
    func deliver(_ wake: DeliveryWake) {
        // Under the state lock, as a consumer's registration: one that registers later starts after
        // this delivery.
        let delivering = state.withLock { machine in
            let wanted = onUpdate != nil || machine.consumers.consumerCount > 0
            return machine.beginNumberedDelivery(wake, now: now(), snapshot: wanted)
        }
        guard let (delivery, hasNews) = delivering else { return }
        broadcaster.deliver(delivery)
        if hasNews, let onUpdate { onUpdate(delivery.update) }
        schedule(state.withLock { $0.endDelivery(now: now()) })
    }
}
