import Foundation
import TestSupport
import XCTest

/// Each command's options come from one table: its --help, what its parser takes, the shell
/// completions and the man page. Checked from outside, on the built binary, as a user meets them.
final class CommandTablesTests: CLITestCase {
    private let commands = ["probe", "prefetch", "check", "thumbs", "cat", "cache", "serve", "completions"]

    /// The options a help text lists: each line's first word that starts with a dash, with the
    /// placeholder after it (`--width W`), and the one-letter alias before it (`-j, --jobs N`).
    private func listed(in help: String) -> [(names: [String], takes: [String])] {
        help.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("  -") else { return nil }
            var names: [String] = []
            var takes: [String] = []
            for word in line.split(separator: " ").map(String.init) {
                let placeholder = word.first.map { $0.isUppercase || $0 == "[" || $0 == "'" } ?? false
                if word.hasPrefix("-") && takes.isEmpty {
                    names.append(word.trimmingCharacters(in: [","]))
                } else if !names.isEmpty && takes.count < 2 && placeholder {
                    takes.append(word)
                } else {
                    break
                }
            }
            return (names, takes)
        }
    }

    func testEveryOptionHelpListsIsOneTheCommandTakes() throws {
        for command in commands {
            let help = try mprobe([command, "--help"]).stdoutString
            let options = listed(in: help)
            XCTAssertFalse(options.isEmpty, "\(command) lists no options")
            for option in options {
                for name in option.names {
                    // A value for each placeholder (an optional one needs none), then --help: the
                    // parser must take the option and show the help instead of running.
                    let values = option.takes.filter { !$0.hasPrefix("[") }.map { _ in "1" }
                    let argv = [command, name] + values + ["--help"]
                    let result = try mprobe(argv, expect: nil)
                    XCTAssertEqual(result.status, 0, "mprobe \(argv.joined(separator: " ")): \(result.stderr)")
                    XCTAssertTrue(result.stdoutString.hasPrefix("Usage: mprobe"), argv.joined(separator: " "))
                }
            }
        }
    }

    func testTheMainHelpListsEveryCommandApartFromItsSummary() throws {
        let help = try mprobe(["--help"]).stdoutString
        let lines = help.split(separator: "\n").drop { !$0.hasPrefix("Commands:") }.dropFirst()
            .prefix { $0.hasPrefix("  ") }
        // Each line is the name, at least two spaces, the summary: a long name ran into its summary.
        let names = lines.compactMap { line in
            line.dropFirst(2).range(of: "  ").map { String(line.dropFirst(2)[..<$0.lowerBound]) }
        }
        XCTAssertEqual(names.count, lines.count, help)
        XCTAssertEqual(Set(names), Set(commands + ["ffprobe"]), help)
    }

    func testAnAliasBelongsToTheCommandsThatHaveIt() throws {
        try mprobe(["probe", "-j", "2", "--help"])
        try mprobe(["thumbs", "-j", "2", "--help"])
        // cat reads one input: its table has no -j, so -j is no option of cat.
        let cat = try mprobe(["cat", "-j", "2", samplePath("faststart.mp4")], expect: 2)
        XCTAssertTrue(cat.stderr.contains("unknown option -j"), cat.stderr)
        XCTAssertFalse(try mprobe(["cat", "--help"]).stdoutString.contains("--jobs"))
        let serve = try mprobe(["serve", "-v"], expect: 2)
        XCTAssertTrue(serve.stderr.contains("unknown option -v"), serve.stderr)
    }

    func testBashCompletesEachCommandsOwnOptions() throws {
        let script = dir.file("mprobe.bash")
        try mprobe(["completions", "bash"]).stdout.write(to: script)
        try XCTUnwrap(try? runProcess("bash", ["-n", script])).assertSuccess()
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let shell =
                "source '\(script)'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _mprobe; printf '%s\\n' \"${COMPREPLY[@]}\""
            let result = try runProcess("bash", ["-c", shell])
            XCTAssertEqual(result.status, 0, result.stderr)
            return result.stdoutString.split(separator: "\n").map(String.init)
        }
        XCTAssertEqual(try complete(["mprobe", "thumbs", "--spr"]), ["--sprite"])
        XCTAssertEqual(try complete(["mprobe", "prefetch", "--spr"]), [], "prefetch has no --sprite")
        XCTAssertTrue(try complete(["mprobe", "serve", "--"]).contains("--header-for"))
        XCTAssertFalse(try complete(["mprobe", "serve", "--"]).contains("--json"), "serve takes no --json")
        XCTAssertEqual(try complete(["mprobe", "cat", "-"]).filter { $0 == "-j" }, [], "cat has no -j")
        XCTAssertEqual(try complete(["mprobe", "pre"]).first, "prefetch")
        XCTAssertTrue(
            try complete(["mprobe", "https://example.com/a.mp4", "--fa"]).contains("--fast"), "mprobe URL is probe")
    }

    func testZshReadsItsCompletionScript() throws {
        let script = dir.file("_mprobe")
        let text = try mprobe(["completions", "zsh"]).stdoutString
        try Array(text.utf8).write(to: script)
        try runProcess("zsh", ["-n", script]).assertSuccess()
        let thumbs = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("thumbs) _arguments") })
        let prefetch = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("prefetch) _arguments") })
        XCTAssertTrue(thumbs.contains("--sprite"))
        XCTAssertFalse(prefetch.contains("--sprite"))
    }

    func testTheManPageIsTheTablesAndShipsCurrent() throws {
        let page = try mprobe(["completions", "man"]).stdoutString
        let file = dir.file("mprobe.1")
        try Array(page.utf8).write(to: file)
        // groff with every warning on: a roff mistake (an unescaped request, a bad font) is one.
        let rendered = try runProcess("groff", ["-man", "-Tutf8", "-ww", "-z", file])
        XCTAssertEqual(rendered.status, 0)
        XCTAssertEqual(rendered.stderr, "", "groff warns")
        for option in ["\\-\\-sprite", "\\-\\-header\\-for", "\\-\\-variants", "\\-\\-range"] {
            XCTAssertTrue(page.contains(option), option)
        }
        let shipped = CLITestCase.samplesDirectory.replacingOccurrences(of: "/Samples", with: "/docs/mprobe.1")
        XCTAssertEqual(
            try String(contentsOfFile: shipped, encoding: .utf8), page,
            "docs/mprobe.1 is not what `mprobe completions man` prints: regenerate it")
    }
}

extension ProcessResult {
    fileprivate func assertSuccess(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(status, 0, stderr, file: file, line: line)
    }
}

extension [UInt8] {
    fileprivate func write(to path: String) throws { try Data(self).write(to: URL(fileURLWithPath: path)) }
}
