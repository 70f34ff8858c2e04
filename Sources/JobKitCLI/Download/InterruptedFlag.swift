import ArgumentParser
import Dispatch
import Foundation
import JobKitNetworking

/// A flag set on the main actor.
@MainActor
final class InterruptedFlag {
    var isSet = false
}
