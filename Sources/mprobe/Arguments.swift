import Foundation

/// A small command-line parser: `--name value`, `--name=value`, boolean `--flag`s and
/// positionals, checked against what a command declares so typos are usage errors.
struct Arguments {
    private(set) var positionals: [String] = []
    private var values: [String: String] = [:]
    /// Every value of each option, in order (`--allow-host a --allow-host b`).
    private var repeated: [String: [String]] = [:]
    private var flags: Set<String> = []
    /// Options that take two values (`--header-for HOST 'Name: value'`), in order.
    private var pairs: [String: [(String, String)]] = [:]

    /// Parses `args` against `options`, the command's table: a one-letter alias is the option
    /// it names in that table, and anything the table lacks is a usage error.
    init(_ args: [String], options: [Option]) throws {
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
                positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            var written = String(arg.drop(while: { $0 == "-" }))
            var inlineValue: String?
            if let eq = written.firstIndex(of: "=") {
                inlineValue = String(written[written.index(after: eq)...])
                written = String(written[..<eq])
            }
            guard let option = options.named(written) else { throw UsageError("unknown option \(arg)") }
            let name = option.name
            switch option.takes {
            case .pair:
                guard inlineValue == nil, i + 1 < args.count else {
                    throw UsageError("option --\(name) needs two values")
                }
                pairs[name, default: []].append((args[i], args[i + 1]))
                i += 2
            case .value:
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard i < args.count else { throw UsageError("option --\(name) needs a value") }
                    value = args[i]
                    i += 1
                }
                values[name] = value
                repeated[name, default: []].append(value)
            case .optionalValue(_, let pattern):
                flags.insert(name)
                if let inlineValue {
                    values[name] = inlineValue
                } else if i < args.count, args[i].range(of: pattern, options: .regularExpression) != nil {
                    values[name] = args[i]
                    i += 1
                }
            case .nothing:
                guard inlineValue == nil else { throw UsageError("option --\(name) takes no value") }
                flags.insert(name)
            }
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    /// The last value given for `name`.
    func value(_ name: String) -> String? { values[name] }
    /// Every value given for `name`, for options that may be repeated.
    func allValues(_ name: String) -> [String] { repeated[name] ?? [] }
    /// Every pair given for a two-value option.
    func allPairs(_ name: String) -> [(String, String)] { pairs[name] ?? [] }

    /// A whole number, if given; its range is checked by whoever uses it.
    func integer(_ name: String) throws -> Int? {
        guard let v = values[name] else { return nil }
        guard let n = Int(v) else { throw UsageError("--\(name) needs a whole number, got '\(v)'") }
        return n
    }

    /// A number in 0...`maximum` (the default allows any time in seconds up to ~30 years).
    func double(_ name: String, maximum: Double = 1e9) throws -> Double? {
        guard let v = values[name] else { return nil }
        guard let d = parseDecimal(v), d >= 0, d <= maximum else {
            throw UsageError("--\(name) needs a number from 0 to \(Int(maximum)), got '\(v)'")
        }
        return d
    }
}

/// A plain decimal number (`12`, `0.5`, `.5`): not the hexadecimal, exponents, `inf` or `nan`
/// that `Double(_:)` also takes (`--at 0x10` was 16 s).
func parseDecimal(_ text: String) -> Double? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard !text.isEmpty, text != ".", parts.count <= 2,
        parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
    else {
        return nil
    }
    return Double(text)
}

/// Parses sizes like `500M`, `10G`, `1048576`, `2GiB`.
func parseByteSize(_ text: String) -> Int64? {
    let t = text.trimmingCharacters(in: .whitespaces).uppercased()
    let units: [(String, Int64)] = [
        ("TIB", 1 << 40), ("GIB", 1 << 30), ("MIB", 1 << 20), ("KIB", 1 << 10),
        ("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10),
        ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1),
    ]
    for (suffix, factor) in units where t.hasSuffix(suffix) {
        guard let n = Double(t.dropLast(suffix.count)), n >= 0 else { return nil }
        return Int64(exactly: (n * Double(factor)).rounded()).flatMap { $0 < 1 << 62 ? $0 : nil }
    }
    return Int64(t).flatMap { $0 >= 0 ? $0 : nil }
}
