/// `mprobe completions bash|zsh|man`: what shells and man read, made from the option tables.
enum CompletionsCommand: OptionCommand {
    static let name = "completions"
    static let summary = "shell completions (bash, zsh) and the man page, from the commands' own tables"
    static let usageText = "Usage: mprobe completions bash|zsh|man"
    static let about = """
        Prints a completion script, or mprobe(1) in roff:
          mprobe completions bash > /usr/share/bash-completion/completions/mprobe
          mprobe completions zsh > ~/.zsh/completions/_mprobe     (a folder on $fpath)
          mprobe completions man > /usr/local/share/man/man1/mprobe.1
        Each command completes the options its --help lists, and only those.
        """
    static let options = [Option("help", short: "h", "this help")]
    static var commonOptions: [Option] { [] }

    static func run(_ args: Arguments) throws -> ExitCode {
        guard args.positionals.count == 1 else { throw UsageError("give one of bash, zsh or man") }
        switch args.positionals[0] {
        case "bash": Console.out(ShellCompletions.bash())
        case "zsh": Console.out(ShellCompletions.zsh())
        case "man": Console.out(ManPage.text())
        default: throw UsageError("'\(args.positionals[0])' is not bash, zsh or man")
        }
        return .success
    }
}
