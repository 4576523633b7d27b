/// One subcommand: its help text and what it does with the arguments after its name.
protocol Command: Sendable {
    static var name: String { get }
    static var summary: String { get }
    /// Full help shown by `mprobe help NAME` and `mprobe NAME --help`.
    static var help: String { get }
    /// Parses `argv` (what follows the command's name) and runs. A `UsageError` is reported
    /// with a pointer to the command's help.
    static func main(_ argv: [String]) throws -> ExitCode
}

/// A command with mprobe's own option syntax (`--name value`, `--flag`), parsed by `Arguments`
/// against the options it declares.
protocol OptionCommand: Command {
    static var valueOptions: Set<String> { get }
    static var flagOptions: Set<String> { get }
    /// Flags that may carry a value, with the pattern a following argument must match to be it.
    static var optionalValues: [String: String] { get }
    /// Options followed by two values.
    static var pairOptions: Set<String> { get }
    static func run(_ args: Arguments) throws -> ExitCode
}

extension OptionCommand {
    static var optionalValues: [String: String] { [:] }
    static var pairOptions: Set<String> { [] }

    static func main(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(
            argv, valueOptions: valueOptions, flagOptions: flagOptions, optionalValues: optionalValues,
            pairOptions: pairOptions)
        if args.flag("help") {
            Console.out(help)
            return .success
        }
        return try run(args)
    }
}
