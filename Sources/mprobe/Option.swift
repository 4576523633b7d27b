/// One option of a command, as the parser reads it and as `--help`, the shell completions and the
/// man page show it. Each command lists its options in one table (`OptionCommand.options`), so
/// none of those can disagree with what the command accepts.
struct Option: Sendable {
    enum Takes: Sendable, Equatable {
        case nothing
        /// `--name VALUE` or `--name=VALUE`.
        case value(String)
        /// A flag that may carry a value: inline (`--sprite=5x4`), or as the next argument when it
        /// matches `pattern` (`--sprite 5x4`).
        case optionalValue(String, pattern: String)
        /// `--name A B`.
        case pair(String, String)
    }

    let name: String
    /// A one-letter alias (`-j`), for this command only.
    let short: Character?
    let takes: Takes
    /// What it does; several lines where it needs them.
    let help: String

    init(_ name: String, short: Character? = nil, _ takes: Takes, _ help: String) {
        (self.name, self.short, self.takes, self.help) = (name, short, takes, help)
    }

    /// A flag.
    init(_ name: String, short: Character? = nil, _ help: String) { self.init(name, short: short, .nothing, help) }

    /// The spelling of its name: `--jobs`, or `-i` for a name of one letter.
    var spelled: String { name.count == 1 ? "-\(name)" : "--\(name)" }

    /// How help shows it: `-j, --jobs N`, `--sprite [CxR]`, `--header-for HOST 'Name: value'`.
    var synopsis: String {
        let names = (short.map { "-\($0), " } ?? "") + spelled
        switch takes {
        case .nothing: return names
        case .value(let v): return "\(names) \(v)"
        case .optionalValue(let v, _): return "\(names) [\(v)]"
        case .pair(let a, let b): return "\(names) \(a) \(b)"
        }
    }

    /// The first line of its help: what completions show beside it.
    var summary: String { help.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? help }
}

extension [Option] {
    /// The option lines of a help text: each synopsis in a column `width` wide, its help beside
    /// it (below it, when the synopsis is wider), further lines of help aligned under the first.
    func helpText(width: Int = 23) -> String {
        map { option in
            let lines = option.help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let indent = String(repeating: " ", count: 2 + width)
            let head = "  " + option.synopsis
            var out: [String] = []
            if head.count < 2 + width - 1 {
                out.append(head.padding(toLength: 2 + width, withPad: " ", startingAt: 0) + lines[0])
            } else {
                out.append(head)
                out.append(indent + lines[0])
            }
            out += lines.dropFirst().map { indent + $0 }
            return out.joined(separator: "\n")
        }
        .joined(separator: "\n")
    }

    /// The option named `name`, by its long name or its one-letter alias.
    func named(_ name: String) -> Option? {
        first { $0.name == name } ?? (name.count == 1 ? first { $0.short.map(String.init) == name } : nil)
    }
}
