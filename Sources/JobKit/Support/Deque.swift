/// A first-in, first-out buffer with amortized O(1) append and removal at the front: the core's
/// own, so that it needs no package beyond the toolchain. Shared with the package's other modules
/// (`package`), not public.
package struct Deque<Element> {
    private var storage: [Element] = []
    private var head = 0

    /// An empty deque.
    package init() {}

    /// How many elements it holds.
    package var count: Int { storage.count - head }

    /// The element `popFirst` would return, if any.
    package var first: Element? { head < storage.count ? storage[head] : nil }

    /// Adds `element` at the back.
    package mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Removes and returns the front element, if any.
    package mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            // Drop the consumed half: each element is moved at most once more, so O(1) amortized.
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// The elements, first to last.
    package var elements: ArraySlice<Element> { storage[head...] }
}

extension Deque: Sendable where Element: Sendable {}
