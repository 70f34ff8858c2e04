/// The idempotency keys of the latest posts, each with where its post is in the store: at most `capacity`
/// keys, the oldest forgotten first.
///
/// A value type without I/O; `PostStore` owns one and consults it in the same step that creates a post.
struct IdempotencyKeys: Sendable {
    /// How many keys a server remembers: its latest 10,000 posts made with a key (at most about 3 MB, with
    /// keys of 255 characters).
    static let defaultCapacity = 10_000

    /// The most keys kept; 0 keeps none.
    let capacity: Int
    /// Each key's post, as an index into the store's posts.
    private var posts: [String: Int] = [:]
    /// The keys in the order they were first remembered: a ring whose oldest key is at `oldest` once full.
    private var order: [String] = []
    private var oldest = 0

    /// An empty table; a negative `capacity` keeps none.
    init(capacity: Int = Self.defaultCapacity) {
        self.capacity = max(capacity, 0)
    }

    /// How many keys it holds: never more than `capacity`.
    var count: Int { posts.count }

    /// The post made with `key`, if the key is still remembered.
    func post(for key: IdempotencyKey) -> Int? {
        posts[key.value]
    }

    /// Remembers that `key` made the post at `index`; when full, forgets the oldest key first. A key it holds
    /// already gets the new post and keeps its age.
    mutating func remember(_ key: IdempotencyKey, post index: Int) {
        guard capacity > 0 else { return }
        if posts.updateValue(index, forKey: key.value) != nil { return }
        if order.count < capacity {
            order.append(key.value)
        } else {
            posts[order[oldest]] = nil
            order[oldest] = key.value
            oldest = (oldest + 1) % capacity
        }
    }
}
