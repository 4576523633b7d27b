import Foundation

// A closed stdout must surface as EPIPE from write(2), not kill the process.
signal(SIGPIPE, SIG_IGN)
Console.reserveStandardDescriptors()
var status = CLI.runMain(Array(CommandLine.arguments.dropFirst()))
GlobalOptions.printLaterCacheWarnings()
// Output that could not be written is an error unless the reader just went away (EPIPE).
if case .failed = Console.stdoutError, status != .localIO {
    Console.error(Console.stdoutError?.description ?? "")
    status = .localIO
}
exit(status.rawValue)
