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
/// against its table of options, from which its help is made too.
protocol OptionCommand: Command {
    /// The `Usage:` lines.
    static var usageText: String { get }
    /// What it does: the paragraphs between the usage and the options.
    static var about: String { get }
    /// Its own options, in the order help lists them.
    static var options: [Option] { get }
    /// Text after its options, before the common ones (none by default).
    static var afterOptions: String { get }
    /// The options it shares with other commands (`GlobalOptions.options` by default).
    static var commonOptions: [Option] { get }
    static func run(_ args: Arguments) throws -> ExitCode
}

extension OptionCommand {
    static var afterOptions: String { "" }
    static var commonOptions: [Option] { GlobalOptions.options }

    /// Every option it accepts.
    static var allOptions: [Option] { options + commonOptions }

    static var help: String {
        var parts = [usageText, about, options.helpText()]
        if !afterOptions.isEmpty { parts.append(afterOptions) }
        if !commonOptions.isEmpty { parts.append("Common options:\n" + commonOptions.helpText()) }
        return parts.joined(separator: "\n\n")
    }

    static func main(_ argv: [String]) throws -> ExitCode {
        let args = try Arguments(argv, options: allOptions)
        if args.flag("help") {
            Console.out(help)
            return .success
        }
        return try run(args)
    }
}
