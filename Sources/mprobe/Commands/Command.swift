/// One subcommand: its help text, the options it accepts and what it does.
protocol Command: Sendable {
    static var name: String { get }
    static var summary: String { get }
    /// Full help shown by `mprobe help NAME` and `mprobe NAME --help`.
    static var help: String { get }
    static var valueOptions: Set<String> { get }
    static var flagOptions: Set<String> { get }
    /// Flags that may carry a value, with the pattern a following argument must match to be it.
    static var optionalValues: [String: String] { get }
    static func run(_ args: Arguments) throws -> ExitCode
}

extension Command {
    static var optionalValues: [String: String] { [:] }
}
