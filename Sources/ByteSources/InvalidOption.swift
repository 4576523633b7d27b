/// A job option out of its range, said without the syntax of where it came from: the CLI shows
/// it as `--name ...`, the service as `"name" ...`.
public struct InvalidOption: Error, Equatable, CustomStringConvertible {
    public let names: [String]
    public let problem: String

    public init(_ name: String, _ problem: String) {
        names = [name]
        self.problem = problem
    }

    public init(_ names: [String], _ problem: String) {
        self.names = names
        self.problem = problem
    }

    public var description: String { shown { $0 } }

    /// The sentence with each option name written as `spell` writes it (e.g. `--\($0)`).
    public func shown(_ spell: (String) -> String) -> String {
        let spelled = names.map(spell)
        let list = spelled.count > 1 ? spelled.dropLast().joined(separator: ", ") + " and " + spelled.last! : spelled[0]
        return list + " " + problem
    }
}
