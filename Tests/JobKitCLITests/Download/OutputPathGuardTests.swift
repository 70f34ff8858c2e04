import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Which output paths (`--trace`) would replace what a download folder keeps: compared after resolving.
@Suite struct OutputPathGuardTests {
    private func plan(_ items: [(name: String, subfolder: String?)]) -> DownloadPlan {
        DownloadPlan(
            items: items.map { item in
                DownloadPlan.Item(
                    url: URL(string: "https://e.com/\(item.name)")!, name: item.name, checksum: nil,
                    subfolder: item.subfolder)
            })
    }

    @Test func pathsOfTheFolderItsSubfoldersTheirFilesAndSidecarsAreRefused() throws {
        let folder = try scratchFolder().path
        try FileManager.default.createDirectory(atPath: folder + "/a/b", withIntermediateDirectories: true)
        let plan = plan([("x.bin", nil), ("y.bin", "a/b")])
        func problem(_ path: String, held: [String?: Set<String>] = [:]) -> String? {
            OutputPathGuard.problem(with: path, option: "--trace", folder: folder, plan: plan, held: held)
        }
        for refused in [
            folder, folder + "/x.bin", folder + "/a", folder + "/a/b", folder + "/a/b/y.bin", folder + "/a/b/z.part",
            folder + "/a/b/.jobkit-downloads.journal", folder + "/a/../x.bin", folder + "/a/b/../../x.bin",
            folder + "/.jobkit-downloads.journal.tmp", folder + "/q.part.meta.tmp",
        ] {
            #expect(problem(refused)?.hasPrefix("--trace '\(refused)' would replace ") == true, "\(refused)")
        }
        for allowed in [folder + "/trace.json", folder + "/y.bin", folder + "/a/x.bin", folder + "/a/b/x.bin"] {
            #expect(problem(allowed) == nil, "\(allowed)")
        }
        #expect(problem(folder + "/old.bin", held: [nil: ["old.bin"]]) != nil, "a file the journal holds")
        #expect(problem(folder + "/a/b/old.bin", held: ["a/b": ["old.bin"]]) != nil)
    }

    @Test func relativePathsAndSymbolicLinksResolveAsTheSystemOpensThem() throws {
        let scratch = try scratchFolder()
        let folder = scratch.appendingPathComponent("out").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: scratch.path + "/link", withDestinationPath: folder)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.path + "/file-link", withDestinationPath: folder + "/x.bin")
        let resolvedFolder = OutputPathGuard.resolved(folder)
        #expect(OutputPathGuard.resolved(scratch.path + "/link/./x.bin") == resolvedFolder + "/x.bin")
        #expect(OutputPathGuard.resolved(scratch.path + "/link/missing/../x.bin") == resolvedFolder + "/x.bin")
        #expect(OutputPathGuard.resolved(scratch.path + "/file-link") == resolvedFolder + "/x.bin", "a dangling link")
        let relative = OutputPathGuard.resolved("some/trace.json")
        #expect(relative == OutputPathGuard.resolved(FileManager.default.currentDirectoryPath) + "/some/trace.json")
        let plan = plan([("x.bin", nil)])
        #expect(
            OutputPathGuard.problem(with: scratch.path + "/file-link", option: "--trace", folder: folder, plan: plan)
                != nil, "a link to a download's name")
    }
}
