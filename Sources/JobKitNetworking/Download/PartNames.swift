import Crypto
import Foundation

/// The names of the files a download keeps beside its destination while it runs: `NAME.part`, its
/// metadata `NAME.part.meta`, and the metadata's temporary `NAME.part.meta.tmp`.
///
/// A name too long for those suffixes (a name may have 255 bytes; `.part.meta.tmp` adds 14) has its
/// sidecars named independently of it: `.jobkit-part-HASH.part` (and `.meta`, `.meta.tmp`), where
/// HASH is the first 128 bits of the name's SHA-256 in hex. Names starting with `.jobkit` are kept
/// for the manager, so no item's own name can be one of these.
struct PartNames: Equatable, Sendable {
    let part: String
    let metadata: String
    let metadataTemporary: String

    /// The longest name whose sidecars are `NAME.part…`: 255 bytes less `.part.meta.tmp`.
    static let longestPlainName = 255 - ".part.meta.tmp".utf8.count

    init(for name: String) {
        let base: String
        if name.utf8.count <= Self.longestPlainName {
            base = name
        } else {
            let digest = SHA256.hash(data: Data(name.utf8)).prefix(16)
            base = ".jobkit-part-" + digest.hexString
        }
        part = base + ".part"
        metadata = part + ".meta"
        metadataTemporary = metadata + ".tmp"
    }

    /// Every sidecar, for removal.
    var all: [String] { [part, metadata, metadataTemporary] }
}
