import Foundation

/// Where `jobkit download` may write a file of its own (`--trace`): never over what a download folder keeps.
///
/// The rule, as a user expects it: a trace may go anywhere, the download folder included, except onto
/// - the download folder itself, a `dir=` subfolder of the plan, or a folder on the way to one;
/// - a file of the command's downloads (`NAME`, or `dir/NAME` in its subfolder), or one the folder's journal
///   holds from an earlier run;
/// - the journal and every name the downloads keep for themselves: names starting with `.jobkit`, and
///   partial downloads (`.part`, `.part.meta`, `.part.meta.tmp`);
/// - any file that exists in the download folder or under it (a new name there is written), or a hard
///   link to one from anywhere.
///
/// Paths are compared after resolving: relative to the working directory, `.` and `..` taken, and the
/// symbolic links of the part that exists followed (`link/a.bin`, where `link` points at the folder, is
/// `a.bin` of the folder).
enum OutputPathGuard {
    /// The suffixes of a partial download's files.
    private static let partialSuffixes = [".part", ".part.meta", ".part.meta.tmp"]

    /// Why the file `option` names at `path` may not be written, or nil when it may: the plan's folders are
    /// `folder` and its subfolders; `held` gives, by subfolder (nil: `folder`), the names a journal holds.
    static func problem(
        with path: String, option: String, folder: String, plan: DownloadPlan, held: [String?: Set<String>] = [:]
    ) -> String? {
        let target = resolved(path)
        let root = resolved(folder)
        var names: [String?: Set<String>] = held
        for item in plan.items { names[item.subfolder, default: []].insert(item.name) }
        let subfolders = Set(plan.items.compactMap(\.subfolder)).union(held.keys.compactMap { $0 })
        var folders: [(subfolder: String?, path: String)] = [(nil, root)]
        folders += subfolders.sorted().map { ($0, resolved(root + "/" + $0)) }
        func refuse(_ what: String) -> String {
            "\(option) '\(path)' would replace \(what) of the download folder '\(folder)': give a path outside "
                + "it, or a name the downloads do not use"
        }
        for (subfolder, folderPath) in folders
        where folderPath == target || folderPath.hasPrefix(target == "/" ? "/" : target + "/") {
            return refuse(subfolder.map { "the subfolder '\($0)' (dir=)" } ?? "the folder itself")
        }
        let parent = (target as NSString).deletingLastPathComponent
        let name = (target as NSString).lastPathComponent
        for (subfolder, folderPath) in folders where folderPath == parent {
            let shown = subfolder.map { "\($0)/\(name)" } ?? name
            if name.hasPrefix(".jobkit") {
                return refuse("'\(shown)', a file the downloads keep (the journal, .jobkit…)")
            }
            if let suffix = partialSuffixes.first(where: { name.hasSuffix($0) }) {
                return refuse("'\(shown)', a partial download (\(suffix))")
            }
            if names[subfolder]?.contains(name) == true { return refuse("the download '\(shown)'") }
        }
        var status = stat()
        guard stat(target, &status) == 0 else { return nil }
        if target.hasPrefix(root == "/" ? "/" : root + "/") {
            return refuse("'\(target.dropFirst(root.count + 1))', a file in it")
        }
        // A hard link from outside: writing through it would change the folder's file.
        if (status.st_mode & S_IFMT) == S_IFREG && status.st_nlink > 1,
            let linked = file(device: status.st_dev, inode: status.st_ino, under: root)
        {
            return refuse("'\(linked)' (a hard link to it)")
        }
        return nil
    }

    /// The path under `root` (relative to it) of the file with this device and inode, if any; symbolic
    /// links are not followed.
    private static func file(device: dev_t, inode: ino_t, under root: String) -> String? {
        guard let walk = FileManager.default.enumerator(atPath: root) else { return nil }
        while let relative = walk.nextObject() as? String {
            var status = stat()
            if lstat(root + "/" + relative, &status) == 0, status.st_dev == device, status.st_ino == inode {
                return relative
            }
        }
        return nil
    }

    /// `path` made absolute (from the working directory), with `.` and `..` taken and every symbolic link on
    /// the way followed — a dangling one too, as `open` with `O_CREAT` would create its target — the way the
    /// system resolves it when the file is opened. A `..` after a part that does not exist is taken as text.
    static func resolved(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var pending = Array(absolute.split(separator: "/").map(String.init).reversed())
        var current: [String] = []
        var links = 0
        while let component = pending.popLast() {
            switch component {
            case ".": continue
            case "..": _ = current.popLast()
            default:
                let candidate = "/" + (current + [component]).joined(separator: "/")
                // At most 40 links, as Linux's ELOOP: a loop resolves no further.
                if links < 40, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: candidate) {
                    links += 1
                    if target.hasPrefix("/") { current = [] }
                    pending += target.split(separator: "/").map(String.init).reversed()
                } else {
                    current.append(component)
                }
            }
        }
        return "/" + current.joined(separator: "/")
    }
}
