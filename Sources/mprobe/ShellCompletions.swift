/// Completion scripts for bash and zsh, made from the commands' option tables: each command
/// completes its own options (a one-letter alias only where that command has it), then paths.
enum ShellCompletions {
    /// The commands with a table, and the options each accepts; `mprobe URL` is `probe`.
    private static var tables: [(name: String, summary: String, options: [Option])] {
        CLI.commands.map { command in
            (command.name, command.summary, (command as? any OptionCommand.Type)?.allOptions ?? [])
        }
    }

    /// Every spelling of `options`: `--jobs -j -i ...`.
    private static func words(_ options: [Option]) -> String {
        options.flatMap { [$0.spelled] + ($0.short.map { ["-\($0)"] } ?? []) }.joined(separator: " ")
    }

    static func bash() -> String {
        let names = tables.map(\.name).joined(separator: " ")
        let cases = tables.map { "        \($0.name)) words=\"\(words($0.options))\" ;;" }
        let probe = words(ProbeCommand.allOptions)
        return """
            # bash completion for mprobe (made by `mprobe completions bash`): source it, or install it as
            # /usr/share/bash-completion/completions/mprobe
            _mprobe() {
                local cur=${COMP_WORDS[COMP_CWORD]} command=${COMP_WORDS[1]} words
                if [ "$COMP_CWORD" -eq 1 ]; then
                    case $cur in
                        -*) command=probe ;; # `mprobe --fast URL` probes
                        *) COMPREPLY=($(compgen -W "\(names) help" -- "$cur") $(compgen -f -- "$cur")); return ;;
                    esac
                fi
                case $command in
            \(cases.joined(separator: "\n"))
                    help) COMPREPLY=($(compgen -W "\(names)" -- "$cur")); return ;;
                    *) words="\(probe)" ;;
                esac
                case $cur in
                    -*) COMPREPLY=($(compgen -W "$words" -- "$cur")) ;;
                    *) COMPREPLY=($(compgen -f -- "$cur")) ;;
                esac
            }
            complete -o default -F _mprobe mprobe
            """
    }

    static func zsh() -> String {
        func quoted(_ text: String) -> String {
            text.replacingOccurrences(of: "'", with: "'\\''").replacingOccurrences(of: "[", with: "(")
                .replacingOccurrences(of: "]", with: ")").replacingOccurrences(of: ":", with: "\\:")
        }
        func spec(_ option: Option) -> String {
            // Repeatable ('*'), an alias expanded by the shell's braces: '*'{-j,--jobs}'[...]'.
            let names = option.short.map { "'*'{-\($0),\(option.spelled)}" } ?? "'*\(option.spelled)'"
            let described = "'[\(quoted(option.summary))]"
            switch option.takes {
            case .nothing: return "\(names)\(described)'"
            case .value(let v), .optionalValue(let v, _): return "\(names)\(described):\(quoted(v)):_files'"
            case .pair(let a, let b): return "\(names)\(described):\(quoted(a)): :\(quoted(b)): '"
            }
        }
        let commands = tables.map { "        '\($0.name):\(quoted($0.summary))'" }
        let cases = tables.map { table in
            "        \(table.name)) _arguments -s \(table.options.map(spec).joined(separator: " ")) '*:input:_files' ;;"
        }
        return """
            #compdef mprobe
            # zsh completion for mprobe (made by `mprobe completions zsh`): put it on $fpath as _mprobe
            _mprobe() {
                local -a commands
                commands=(
            \(commands.joined(separator: "\n"))
                )
                if (( CURRENT == 2 )); then
                    _describe 'command' commands
                    _files
                    return
                fi
                case $words[2] in
            \(cases.joined(separator: "\n"))
                    help) _describe 'command' commands ;;
                    *) _files ;;
                esac
            }
            _mprobe "$@"
            """
    }
}
