/// The one source of chance of a simulated schedule: SplitMix64, so that a seed replays the schedule
/// exactly (the server, the disk, the controls, the kills and the order of callbacks all draw from it).
struct SimulationRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `percent` in 100.
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    /// One of `elements` (which must not be empty).
    mutating func pick<Element>(_ elements: [Element]) -> Element { elements[int(0...elements.count - 1)] }
}
