/// mprobe(1), in man's roff, made from the same tables as `--help`: each command's usage, what it
/// does and its options, the common options, and the exit status.
enum ManPage {
    static func text() -> String {
        var out = [
            #".TH MPROBE 1 "" "mprobe" "User Commands""#,
            ".SH NAME",
            #"mprobe \- probe, prefetch, check and thumbnail remote media with exact HTTP range requests"#,
            ".SH SYNOPSIS",
            ".nf",
        ]
        // Each usage line without "Usage: ", a continuation indented under its command.
        out += CLI.commands.compactMap { ($0 as? any OptionCommand.Type)?.usageText }.flatMap(lines).map { line in
            let text = line.drop { $0 == " " }.replacingOccurrences(of: "Usage: ", with: "")
            return escaped(text.hasPrefix("mprobe") ? text : "    " + text)
        }
        out += [".fi", ".SH COMMANDS"]
        for command in CLI.commands {
            out += [".SS \(escaped(command.name))", escaped(command.summary) + "."]
            guard let table = command as? any OptionCommand.Type else {
                out += [".PP", "See", #".B "mprobe help \#(command.name)""#, "."]
                continue
            }
            out += [".PP", ".nf"] + lines(table.about).map(escaped) + [".fi"]
            out += table.options.flatMap(entry)
            if !table.afterOptions.isEmpty { out += [".PP", ".nf"] + lines(table.afterOptions).map(escaped) + [".fi"] }
        }
        out += [".SH COMMON OPTIONS"] + GlobalOptions.options.flatMap(entry)
        out += [".SH EXIT STATUS"]
        out += ExitCode.allCases.flatMap { [".TP", "\($0.rawValue)", escaped($0.meaning)] }
        out += [".SH SEE ALSO", "ffprobe(1), ffmpeg(1)"]
        return out.joined(separator: "\n")
    }

    private static func entry(_ option: Option) -> [String] {
        [".TP", ".B " + escaped(option.synopsis)] + lines(option.help).map(escaped)
    }

    private static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// A line of text as roff reads it: backslashes and dashes escaped, a leading dot or quote
    /// kept from being a request, an empty line a paragraph break.
    private static func escaped(_ line: String) -> String {
        let text = line.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if text.trimmingCharacters(in: .whitespaces).isEmpty { return ".sp" }
        return text.hasPrefix(".") || text.hasPrefix("'") ? "\\&" + text : text
    }
}
