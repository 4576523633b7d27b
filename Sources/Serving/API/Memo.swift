import Synchronization

/// Answers that depend on a string alone (the route of a path, the media type an origin's
/// `Content-Type` passes as, an origin URL the rules admit), for what every request of a player
/// asks again. Bounded: emptied when it holds `limit` answers.
final class Memo<Value: Sendable>: Sendable {
    private let table = Mutex<[String: Value]>([:])
    private let limit: Int

    init(limit: Int = 1024) { self.limit = limit }

    /// The remembered answer for `key`, else `make`'s, remembered (a throw is not).
    func value(for key: String, _ make: (String) throws -> Value) rethrows -> Value {
        if let known = table.withLock({ $0[key] }) { return known }
        let made = try make(key)
        table.withLock { table in
            if table.count >= limit { table = [:] }
            table[key] = made
        }
        return made
    }
}
