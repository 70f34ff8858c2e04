import Foundation
import Hummingbird
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `stat` says of a regular file: its size and validators.
struct FileInfo: Equatable {
    var size: Int
    /// Modification time: whole seconds and nanoseconds.
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int

    /// Nil when `path` is missing or not a regular file.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        size = Int(info.st_size)
        #if canImport(Darwin)
            modifiedSeconds = Int(info.st_mtimespec.tv_sec)
            modifiedNanoseconds = Int(info.st_mtimespec.tv_nsec)
        #else
            modifiedSeconds = Int(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
        #endif
    }

    /// A strong validator: any write that changes the size or the modification time changes it.
    var entityTag: String {
        "\"\(String(size, radix: 16))-\(String(modifiedSeconds, radix: 16))-\(String(modifiedNanoseconds, radix: 16))\""
    }

    /// The modification time as an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    var lastModified: String {
        var time = time_t(modifiedSeconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let day = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
