import Reports
import URLSupport

/// Failures of a batch command: each is reported as it comes (a line on stderr, and an object on
/// stdout with `--json`), and the exit status says whether any failed.
struct BatchFailures {
    private(set) var codes: [ExitCode] = []
    let json: Bool
    /// How inputs are shown (secrets hidden).
    let urlRules: URLRules

    mutating func report(input: String, error: Error) {
        let code = ExitCode.forError(error)
        codes.append(code)
        // Most errors already name the input (URLs, paths, credentials redacted); the others get it in front.
        let shown = urlRules.shown(input)
        let text = "\(error)"
        Console.error(text.contains(shown) ? text : "\(shown): \(text)")
        if json {
            Console.out(
                JSON.object([
                    ("url", .string(shown)), ("error", .string(text)),
                    ("exit_code", .int(Int(code.rawValue))),
                ]).text)
        }
    }

    /// One input: that failure's own code; several: 1 if any failed.
    func exitCode(inputs: Int) -> ExitCode {
        guard let first = codes.first else { return .success }
        return inputs == 1 ? first : .partialFailure
    }
}
