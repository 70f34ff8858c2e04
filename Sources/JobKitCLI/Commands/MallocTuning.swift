#if canImport(Glibc)
    import Glibc
#endif

/// How `jobkit` asks the C allocator to give memory back.
enum MallocTuning {
    /// glibc serves an allocation of 128 KiB or more with a mapping of its own, returned to the system
    /// when freed — until a large block is freed: then it raises that threshold (up to 32 MiB) and later
    /// large arrays come from the heap, whose holes stay in the process when freed. A download of 100,000
    /// files grows arrays of every item (the plan, the requests, the manager's table) by doubling: with
    /// the threshold left to move, 30,000 files peaked at 124 MB, against 98 MB with it fixed (the heap
    /// itself peaked at about 50 MB). Nothing to do elsewhere (Apple platforms' allocator returns large
    /// blocks anyway). Called first thing, before any thread starts.
    static func apply() {
        #if canImport(Glibc)
            // `mallopt` is in <malloc.h>, which the Glibc module does not import: looked up by name.
            guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else { return }
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
            _ = mallopt(mmapThreshold, 128 << 10)
        #endif
    }
}
