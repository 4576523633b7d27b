import Foundation

/// Reading JSON request bodies (Foundation's parser, then typed accessors with clear errors).
struct RequestObject {
    private let members: [String: Any]

    /// The top-level object of `body`, or a 400 naming what is wrong.
    init(_ body: [UInt8]) throws {
        guard !body.isEmpty else { throw APIError.badRequest("the request needs a JSON object body") }
        // JSON between systems is UTF-8 (RFC 8259); other encodings would be parsed here and
        // then stored and shown as something else.
        guard String(bytes: body, encoding: .utf8) != nil, !body.contains(0) else {
            throw APIError.badRequest("the body must be JSON in UTF-8")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw APIError.badRequest("the body is not a JSON object")
        }
        members = object
    }

    var keys: Set<String> { Set(members.keys) }

    /// The object as JSON text (keys sorted) with the URLs of `url`/`urls` passed through `transform`.
    func mappingURLs(_ transform: (String) -> String) throws -> String {
        var copy = members
        for key in ["url", "urls", "output"] {
            if let one = copy[key] as? String { copy[key] = transform(one) }
            if let list = copy[key] as? [Any] { copy[key] = list.map { ($0 as? String).map(transform) ?? $0 } }
        }
        let data = try JSONSerialization.data(withJSONObject: copy, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    func has(_ key: String) -> Bool { members[key] != nil && !(members[key] is NSNull) }

    func string(_ key: String) throws -> String? {
        guard has(key) else { return nil }
        guard let value = members[key] as? String else { throw APIError.badRequest("\"\(key)\" must be a string") }
        return value
    }

    func number(_ key: String) throws -> Double? {
        guard has(key) else { return nil }
        guard let value = members[key] as? NSNumber, !isBoolean(value), value.doubleValue.isFinite else {
            throw APIError.badRequest("\"\(key)\" must be a number")
        }
        return value.doubleValue
    }

    func integer(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let value = try number(key) else { return nil }
        guard let exact = Int(exactly: value), range.contains(exact) else {
            throw APIError.badRequest(
                "\"\(key)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return exact
    }

    /// A string or an array of strings.
    func strings(_ key: String) throws -> [String]? {
        guard has(key) else { return nil }
        if let one = members[key] as? String { return [one] }
        guard let list = members[key] as? [Any], list.allSatisfy({ $0 is String }) else {
            throw APIError.badRequest("\"\(key)\" must be a string or an array of strings")
        }
        return list.compactMap { $0 as? String }
    }

    func numbers(_ key: String) throws -> [Double]? {
        guard has(key) else { return nil }
        guard let list = members[key] as? [Any],
            list.allSatisfy({ ($0 as? NSNumber).map { !isBoolean($0) && $0.doubleValue.isFinite } ?? false })
        else {
            throw APIError.badRequest("\"\(key)\" must be an array of numbers")
        }
        return list.compactMap { ($0 as? NSNumber)?.doubleValue }
    }

    /// JSON `true` or `false`, nothing else (`"false"`, a string, is not false: it is a 400).
    func boolean(_ key: String) throws -> Bool? {
        guard has(key) else { return nil }
        guard let value = members[key] as? NSNumber, isBoolean(value) else {
            throw APIError.badRequest("\"\(key)\" must be true or false")
        }
        return value.boolValue
    }

    /// `true`/`false`, or a string (e.g. `"sprite": "5x4"`).
    func flagOrString(_ key: String) throws -> (Bool, String?)? {
        guard has(key) else { return nil }
        if let text = members[key] as? String { return (true, text) }
        guard let value = members[key] as? NSNumber, isBoolean(value) else {
            throw APIError.badRequest("\"\(key)\" must be true, false or a string")
        }
        return (value.boolValue, nil)
    }
}

/// JSON `true`/`false` arrive as NSNumbers of type "c" (`is Bool` is true for 0 and 1 too).
private func isBoolean(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }
