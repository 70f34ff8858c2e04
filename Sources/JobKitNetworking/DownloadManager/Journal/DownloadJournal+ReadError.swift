extension DownloadJournal {
    /// Why the bytes of a journal are not one this version reads: it is left as it is.
    enum ReadError: Error, Equatable {
        case notAJournal
        case unsupportedVersion(Int)
    }
}
