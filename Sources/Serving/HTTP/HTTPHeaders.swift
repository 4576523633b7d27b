/// A request's headers, names lowercased, one value per name (`RequestHead.parse` keeps the first
/// of a repeated header).
///
/// A short list searched in order, not a dictionary: a player's request carries a handful of
/// headers and the service asks for a dozen names on each one, most of them not sent; hashing
/// every name asked was a tenth of a cached range's time in user space. `RequestHead.maxFields`
/// bounds the list.
public struct HTTPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    private struct Field: Sendable, Equatable {
        let name: String
        var value: String
    }

    private var fields: [Field] = []

    init(minimumCapacity: Int) { fields.reserveCapacity(minimumCapacity) }

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    /// The value of `name` (lowercase); setting it replaces the value.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name == name }?.value }
        set {
            let at = fields.firstIndex { $0.name == name }
            switch (at, newValue) {
            case (let at?, let value?): fields[at].value = value
            case (let at?, nil): fields.remove(at: at)
            case (nil, let value?): fields.append(Field(name: name, value: value))
            case (nil, nil): break
            }
        }
    }

    /// The same names with the same values, in any order (as a dictionary compares).
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && lhs.fields.allSatisfy { rhs[$0.name] == $0.value }
    }
}
