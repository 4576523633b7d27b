import Synchronization

/// The URLs whose origin answered the proxy's probe a moment ago (`Service.promisable`). A
/// probe's answer says the origin was serving one round trip before the headers; the body
/// reaches the gap it probed only later, after the cached run is sent. An answer younger than
/// `freshness` is as good evidence, so the next partly cached range of the same URL (a player's
/// seek, its next request) is promised whole without asking again: one probe per player start,
/// not one per request. A failed probe forgets the URL.
final class RecentAnswers: Sendable {
    private let answered = Mutex<[String: ContinuousClock.Instant]>([:])
    private let freshness: Duration
    /// URLs remembered at most: past it the stale ones go, and if none is stale, all of them.
    private let limit: Int

    init(freshness: Duration = .seconds(2), limit: Int = 4096) {
        (self.freshness, self.limit) = (freshness, limit)
    }

    func isFresh(_ url: String) -> Bool {
        answered.withLock { map in map[url].map { ContinuousClock.now - $0 < freshness } ?? false }
    }

    func answered(_ url: String) {
        let now = ContinuousClock.now
        answered.withLock { map in
            if map.count >= limit {
                map = map.filter { now - $0.value < freshness }
                if map.count >= limit { map = [:] }
            }
            map[url] = now
        }
    }

    func failed(_ url: String) {
        _ = answered.withLock { $0.removeValue(forKey: url) }
    }
}
