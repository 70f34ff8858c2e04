/// A weak reference to the client, for the router that its session retains.
// Safety: copied whole behind the router's lock; TransferClient is Sendable and weak loads are atomic.
struct WeakClient: @unchecked Sendable {
    weak var client: TransferClient?

    init(_ client: TransferClient?) { self.client = client }
}
