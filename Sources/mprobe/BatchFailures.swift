import Reports

/// Failures of a batch command: each is reported as it comes (a line on stderr, and an object on
/// stdout with `--json`), and the exit status says whether any failed.
struct BatchFailures {
    private(set) var codes: [ExitCode] = []
    let json: Bool

    mutating func report(input: String, error: Error) {
        let code = ExitCode.forError(error)
        codes.append(code)
        // Most errors already name the input (URLs, paths); the others get it in front.
        let text = "\(error)"
        Console.error(text.contains(input) ? text : "\(input): \(text)")
        if json {
            Console.out(JSON.object([("url", .string(input)), ("error", .string("\(error)")),
                                     ("exit_code", .int(Int(code.rawValue)))]).text)
        }
    }

    /// One input: that failure's own code; several: 1 if any failed.
    func exitCode(inputs: Int) -> ExitCode {
        guard let first = codes.first else { return .success }
        return inputs == 1 ? first : .partialFailure
    }
}
