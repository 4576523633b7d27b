import Synchronization

/// Answers that depend on a string alone (the route of a path, the media type an origin's
/// `Content-Type` passes as, an origin URL the rules admit), for what every request of a player
/// asks again. Bounded: emptied when it holds `limit` answers.
final class Memo<Value: Sendable>: Sendable {
    private struct Table {
        var answers: [String: Value] = [:]
        /// The last answer given: a player asks the same again and again, and comparing a key
        /// (often the very same string) costs less than hashing it.
        var last: (key: String, value: Value)?
    }

    private let table = Mutex(Table())
    private let limit: Int

    init(limit: Int = 1024) { self.limit = limit }

    /// The remembered answer for `key`, else `make`'s, remembered (a throw is not).
    func value(for key: String, _ make: (String) throws -> Value) rethrows -> Value {
        let known = table.withLock { table -> Value? in
            if let last = table.last, last.key == key { return last.value }
            guard let value = table.answers[key] else { return nil }
            table.last = (key, value)
            return value
        }
        if let known { return known }
        let made = try make(key)
        table.withLock { table in
            if table.answers.count >= limit { table.answers = [:] }
            table.answers[key] = made
            table.last = (key, made)
        }
        return made
    }
}
