import JobKitTestSupport

/// The one source of chance of a simulated schedule, so that a seed replays the schedule exactly (the
/// server, the disk, the controls, the kills and the order of callbacks all draw from it).
struct SimulationRandom {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    /// A number in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `percent` in 100.
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    /// One of `elements` (which must not be empty).
    mutating func pick<Element>(_ elements: [Element]) -> Element { elements[int(0...elements.count - 1)] }
}
