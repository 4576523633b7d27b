import Foundation

/// The mprobe CLI: a thin layer over the libraries that parses arguments, prints, and maps
/// errors to exit codes.
enum CLI {
    static let commands: [any Command.Type] = [
        ProbeCommand.self, PrefetchCommand.self, CheckCommand.self, ThumbsCommand.self, CatCommand.self,
        CacheCommand.self, ServeCommand.self, FFprobeCommand.self, CompletionsCommand.self,
    ]

    static func mainHelp() -> String {
        // A column as wide as the longest name and two spaces.
        let width = (commands.map { $0.name.count }.max() ?? 0) + 2
        let list = commands.map { "  \($0.name.padding(toLength: width, withPad: " ", startingAt: 0))\($0.summary)" }
            .joined(separator: "\n")
        let codes = ExitCode.allCases.map {
            "  \(String($0.rawValue).padding(toLength: 4, withPad: " ", startingAt: 0))\($0.meaning)"
        }
        .joined(separator: "\n")
        return """
            mprobe — probe, prefetch, check and thumbnail remote media with exact HTTP range requests

            Usage: mprobe URL|PATH...          probe (see mprobe help probe)
                   mprobe COMMAND [options]
                   mprobe help COMMAND

            Commands:
            \(list)

            Exit status:
            \(codes)
            """
    }

    static func runMain(_ argv: [String]) -> ExitCode {
        guard let first = argv.first else {
            // No arguments is a usage error: the help goes where errors go.
            Console.writeStderr(mainHelp() + "\n")
            return .usage
        }
        guard first != "--help", first != "-h", first != "help" || argv.count > 1 else {
            Console.out(mainHelp())
            return .success
        }
        if first == "help" {
            guard let command = commands.first(where: { $0.name == argv[1] }) else {
                Console.error("unknown command '\(argv[1])'\n\n" + mainHelp())
                return .usage
            }
            Console.out(command.help)
            return .success
        }
        // `mprobe URL` means `mprobe probe URL`: anything that is not a command name is an input.
        var argv = argv
        let command: any Command.Type
        if let named = commands.first(where: { $0.name == first }) {
            command = named
            argv.removeFirst()
        } else if first.hasPrefix("-") || first.contains("/") || first.contains(".") {
            command = ProbeCommand.self
        } else {
            Console.error("unknown command '\(first)' (see mprobe --help)")
            return .usage
        }
        do {
            return try command.main(argv)
        } catch let error as UsageError {
            Console.error("\(error.description) (see mprobe \(command.name) --help)")
            return .usage
        } catch {
            Console.error("\(error)")
            return ExitCode.forError(error)
        }
    }
}
