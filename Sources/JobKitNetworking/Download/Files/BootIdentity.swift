import Foundation

#if canImport(Darwin)
    import Darwin
#endif

/// Which boot of the machine this process runs in: a random identity the kernel makes at each
/// start, so that a `.part` written before an operating-system crash or a power loss is told from
/// one written since (`PartMetadata.boot`). Linux: `/proc/sys/kernel/random/boot_id`; Apple
/// platforms: `sysctl kern.bootsessionuuid`.
///
/// Read once per process (the first time it is asked for), from any thread. Nil when it cannot be
/// read (a sandbox, a `/proc` not mounted): a `.part` then counts as possibly written before a
/// restart.
enum BootIdentity {
    /// The identity of the running boot; nil when it cannot be read.
    static let current: String? = read()

    /// Reads the identity of the running boot; nil when it cannot be read.
    private static func read() -> String? {
        #if canImport(Darwin)
            var size = 0
            guard sysctlbyname("kern.bootsessionuuid", nil, &size, nil, 0) == 0, (1...256).contains(size) else {
                return nil
            }
            var bytes = [CChar](repeating: 0, count: size)
            guard sysctlbyname("kern.bootsessionuuid", &bytes, &size, nil, 0) == 0 else { return nil }
            return validated(String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        #else
            guard let handle = FileHandle(forReadingAtPath: "/proc/sys/kernel/random/boot_id") else { return nil }
            defer { try? handle.close() }
            guard let data = try? handle.read(upToCount: 256) else { return nil }
            return validated(String(decoding: data, as: UTF8.self))
        #endif
    }

    /// `text` without surrounding white space, when it is a plausible identity (1 to 64 printable
    /// ASCII characters); else nil.
    static func validated(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...64).contains(trimmed.utf8.count), trimmed.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return nil
        }
        return trimmed
    }
}
