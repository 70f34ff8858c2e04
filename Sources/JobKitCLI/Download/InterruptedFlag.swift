import ArgumentParser
import Dispatch
import Foundation
import JobKitNetworking

/// A flag set on the main actor when the command is interrupted, and the manager running then (closed by it).
@MainActor
final class InterruptedFlag {
    var isSet = false
    var manager: DownloadManager?
}
