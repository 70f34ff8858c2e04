import AsyncHTTPClient
import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transports every download test runs through.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case urlSession
    case asyncHTTPClient

    /// One client for every test: never released, so it needs no shutdown.
    static let http = HTTPClient(eventLoopGroupProvider: .singleton)

    var transport: DownloadTransport {
        switch self {
        case .urlSession: .urlSession(.shared)
        case .asyncHTTPClient: .asyncHTTPClient(Self.http)
        }
    }

    var testDescription: String { rawValue }
}
