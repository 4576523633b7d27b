import Foundation

// A closed stdout must surface as EPIPE from write(2), not kill the process.
signal(SIGPIPE, SIG_IGN)
exit(CLI.runMain(Array(CommandLine.arguments.dropFirst())).rawValue)
