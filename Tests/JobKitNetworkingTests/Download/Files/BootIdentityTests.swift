import Foundation
import Testing

@testable import JobKitNetworking

/// The machine's boot identity, as `.part` metadata records it.
@Suite struct BootIdentityTests {
    @Test func theRunningBootIsReadOnceAndTheSameEachTime() throws {
        #if os(Linux) || canImport(Darwin)
            let identity = try #require(BootIdentity.current)
            #expect(BootIdentity.validated(identity) == identity)
            #expect(BootIdentity.current == identity)
        #endif
    }

    @Test func onlyAPlausibleIdentityIsAccepted() {
        #expect(
            BootIdentity.validated("9bba5d24-b692-4de3-aafd-837c9401e17d\n") == "9bba5d24-b692-4de3-aafd-837c9401e17d")
        #expect(BootIdentity.validated("") == nil)
        #expect(BootIdentity.validated(" \n") == nil)
        #expect(BootIdentity.validated("a b") == nil)
        #expect(BootIdentity.validated(String(repeating: "a", count: 65)) == nil)
    }
}
