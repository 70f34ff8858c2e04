import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Safety: URLSessionTask is thread-safe; it is only resumed and cancelled through this box.
struct UncheckedTask: @unchecked Sendable {
    let task: URLSessionTask

    init(_ task: URLSessionTask) { self.task = task }
}
