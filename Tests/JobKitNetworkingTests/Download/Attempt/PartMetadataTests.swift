import Foundation
import Testing

@testable import JobKitNetworking

/// What a `.part`'s metadata says of the boot it was written in, and that an older JobKit's still reads.
@Suite struct PartMetadataTests {
    private let url = "http://host/file.bin"

    @Test func bytesAreTrustedOnlyInTheBootThatWroteThem() {
        var metadata = PartMetadata(url: url, etag: "\"v1\"", lastModified: nil, total: 100)
        metadata.boot = "boot-a"
        #expect(metadata.isWrittenInBoot("boot-a"))
        #expect(!metadata.isWrittenInBoot("boot-b"), "the machine restarted")
        #expect(!metadata.isWrittenInBoot(nil), "the running boot cannot be told")
        metadata.boot = ""
        #expect(!metadata.isWrittenInBoot("boot-a"), "written where the boot could not be told")
        #expect(!metadata.isWrittenInBoot(""))
        metadata.boot = nil
        #expect(metadata.isWrittenInBoot("boot-a"), "an older JobKit's, trusted as it trusted it")
        #expect(!metadata.isWrittenInBoot(nil))
    }

    @Test func olderMetadataWithoutTheNewFieldsDecodes() throws {
        let older = Data(#"{"url":"http://host/file.bin","etag":"\"v1\"","total":100}"#.utf8)
        let metadata = try JSONDecoder().decode(PartMetadata.self, from: older)
        #expect(metadata == PartMetadata(url: url, etag: "\"v1\"", lastModified: nil, total: 100))
        #expect(metadata.boot == nil && metadata.synced == nil && metadata.syncedSegments == nil)
    }

    @Test func theFlushedProgressSurvivesEncoding() throws {
        var metadata = PartMetadata(url: url, etag: "\"v1\"", lastModified: nil, total: 100)
        metadata.boot = "boot-a"
        metadata.synced = 64
        metadata.segments = SegmentMap.split(length: 100, into: 2)
        metadata.syncedSegments = SegmentMap.split(length: 100, into: 2)
        let decoded = try JSONDecoder().decode(PartMetadata.self, from: JSONEncoder().encode(metadata))
        #expect(decoded == metadata)
    }
}
