#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// File-descriptor helpers shared by every JobKit module.
package enum POSIXFile {
    /// Writes every byte of `bytes` to `descriptor`, retrying short writes and `EINTR`: the one
    /// write loop of every JobKit module (downloads, uploads, the posts log).
    ///
    /// - Returns: nil when everything was written, else the `errno` of the write that failed.
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        guard let base = bytes.baseAddress else { return nil }
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
                let written = Darwin.write(descriptor, base + offset, bytes.count - offset)
            #elseif canImport(Glibc)
                let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
            #else
                let written = Musl.write(descriptor, base + offset, bytes.count - offset)
            #endif
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}
