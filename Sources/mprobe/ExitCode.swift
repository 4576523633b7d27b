import ByteSources
import Caching
import FFmpeg
import MediaKit
import RangeFetch
import Reports
import Serving

/// The process exit statuses, documented in `--help` and the README.
enum ExitCode: Int32, CaseIterable {
    case success = 0
    /// Some inputs of a batch failed (each is reported); for `mprobe ffprobe`, as for ffprobe, the
    /// input could not be read.
    case partialFailure = 1
    case usage = 2
    /// The origin could not be reached or answered with an error.
    case network = 3
    /// `--offline` and the needed bytes are not cached.
    case offlineMiss = 4
    /// The input is not media libavformat can read, or it is malformed or truncated.
    case media = 5
    /// A local file or the cache directory could not be read or written.
    case localIO = 6
    /// An error no part of mprobe expected: a bug.
    case internalError = 70
    case cancelled = 130

    var meaning: String {
        switch self {
        case .success: return "success"
        case .partialFailure: return "some inputs of a batch failed (mprobe ffprobe: the input could not be read)"
        case .usage: return "usage error (unknown option, bad value)"
        case .network: return "network or HTTP error (unreachable, 4xx/5xx, timeout, TLS; serve: its PostgreSQL)"
        case .offlineMiss: return "--offline and the needed bytes are not cached"
        case .media: return "not readable media (malformed, truncated, unsupported)"
        case .localIO: return "local file or cache directory error"
        case .internalError: return "internal error (a bug in mprobe: please report it)"
        case .cancelled: return "interrupted"
        }
    }

    /// Every error type the libraries throw maps here on purpose; an unknown one is a bug, not
    /// "malformed media".
    static func forError(_ error: Error) -> ExitCode {
        switch error {
        case is UsageError: return .usage
        case let e as FetchError:
            if case .cancelled = e { return .cancelled }
            return .network
        case let e as SourceError:
            switch e {
            case .offlineMiss: return .offlineMiss
            case .fileNotFound, .fileUnreadable, .notKept, .memoryFull: return .localIO
            case .unsupportedInput, .invalidURL: return .usage
            case .inconsistentOrigin, .versionChanged: return .network
            }
        case is CacheError, is SQLiteError, is OutputError, is StdoutError, is JobStoreError: return .localIO
        case is PostgresError: return .network  // serve's job store could not be reached
        case let e as MediaError: return e == .interrupted ? .cancelled : .media
        case is CancellationError: return .cancelled
        case is FFmpegError: return .media
        case is FFmpegUnavailable: return .localIO  // an installation without the libraries it was built with
        case let e as ServiceError:
            if case .configuration = e { return .usage }
            return .localIO  // the address cannot be listened on
        default: return .internalError
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
