import ByteSources
import FFmpeg
import MediaKit
import Reports

/// `mprobe ffprobe [ffprobe options] INPUT`: a compatibility front end, so that
/// `alias ffprobe='mprobe ffprobe'` serves pipelines that ask ffprobe for JSON with the format and
/// streams, while the bytes come through mprobe's cache with exact range requests.
enum FFprobeCommand: Command {
    static let name = "ffprobe"
    static let summary = "ffprobe's JSON output, for pipelines (alias ffprobe='mprobe ffprobe')"
    static let help = """
        Usage: mprobe ffprobe [-v LEVEL] [-hide_banner] -of json [-show_format] [-show_streams]
                              [-show_entries SPEC] [-select_streams SPEC] [-i] INPUT

        Prints what `ffprobe` (FFmpeg 5.1) prints for the same options: the same sections, keys,
        key order and value types, laid out the same way. Reads INPUT (a URL or a path) as
        `mprobe probe` does: through the cache, with exact range requests.

        ffprobe options understood, with ffprobe's meaning:
          -of json, -print_format json   the output format (JSON is the only one)
          -show_format                   the container: filename, format, duration, size, bit rate, tags
          -show_streams                  every stream, with its disposition, tags and side data
          -show_entries SPEC             only these sections and keys, e.g. format=duration or
                                         stream=codec_name,width:stream_tags=language
          -select_streams SPEC           streams by FFmpeg's stream specifier: v, a, s, v:0, a:1, 0, p:1, #0x100
          -v LEVEL, -loglevel LEVEL      quiet, panic or fatal: no messages; error: errors only;
                                         warning, info (the default) and up: also mprobe's and FFmpeg's warnings
          -hide_banner                   accepted (mprobe prints no banner)
          -i INPUT                       the input, as a plain argument is
        Any other option is a usage error naming it. mprobe's own options can be added with two
        dashes: --cache-dir DIR, --max-cache-size SIZE, --no-cache, --offline, --timeout SECONDS,
        --cacert FILE, --header 'Name: value', --header-file FILE, --user-agent TEXT, --proxy URL,
        --location-trusted, --cache-key PRESET, --cache-key-ignore-query NAME, --config FILE.

        The filename printed is the input as given, except that a password in a URL is shown as ***.

        Exit status, as ffprobe's: 0 when the input was read; 1 when it could not be (the error
        on stderr, and `{}` on stdout as ffprobe prints it). Besides: 2 for an option mprobe ffprobe
        does not support or a bad value (nothing is read), 130 when interrupted.
        """

    static func main(_ argv: [String]) throws -> ExitCode {
        if argv.contains(where: { ["-h", "-help", "--help"].contains($0) }) {
            Console.out(help)
            return .success
        }
        let args = try FFprobeArguments(argv)
        let showsErrors = args.logLevel >= 16
        let showsWarnings = args.logLevel >= 24
        if showsWarnings { FFmpegLog.showWarnings() }
        let options = try GlobalOptions(args.global)
        do {
            let session = try options.session()
            let details = try Prober().details(args.input, session: session, streams: args.streams)
            if showsWarnings { details.warnings.forEach(Console.warning) }
            Console.out(FFprobeReport.text(details, showing: args.entries))
            return .success
        } catch let usage as UsageError {
            throw usage
        } catch {
            if showsErrors {
                var failure = BatchFailures(json: false, urlRules: try options.urlRules())
                failure.report(
                    input: args.input,
                    error: (error as? InvalidOption).map { UsageError($0.shown { "-" + $0 }) } ?? error)
            }
            Console.out(FFprobeReport.failureText)
            return ExitCode.forError(error) == .cancelled ? .cancelled : .partialFailure
        }
    }
}
