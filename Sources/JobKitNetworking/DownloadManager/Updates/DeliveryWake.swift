/// When the result queue should be woken for a delivery.
enum DeliveryWake: Equatable {
    case now
    case later(generation: UInt64, afterNanoseconds: UInt64)
}
