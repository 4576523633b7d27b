import ByteSources
import Caching
import FFmpeg
import Foundation
import MediaKit
import RangeFetch
import Reports
import URLSupport

/// An error as the API answers it: a status and `{"error": {"code", "message"}}`.
struct APIError: Error {
    let status: Int
    let code: String
    let message: String

    init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    var response: HTTPResponse {
        var response = HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")],
            body: .bytes(Array((APIError.json(code: code, message: message).text + "\n").utf8)))
        if status == 401 { response.headers.append(("WWW-Authenticate", "Bearer")) }
        // Every 503 is a limit that frees itself within moments.
        if status == 503 { response.headers.append(("Retry-After", "1")) }
        return response
    }

    static func json(code: String, message: String) -> JSON {
        .object([("error", .object([("code", .string(code)), ("message", .string(message))]))])
    }

    static func badRequest(_ message: String) -> APIError {
        APIError(status: 400, code: "bad_request", message: message)
    }
    static func notFound(_ message: String) -> APIError { APIError(status: 404, code: "not_found", message: message) }
    static func forbidden(_ message: String) -> APIError { APIError(status: 403, code: "forbidden", message: message) }
    static func unavailable(_ message: String) -> APIError {
        APIError(status: 503, code: "unavailable", message: message)
    }

    /// What a library error means for a client of the API, with every URL in its message shown
    /// by `rules` (a message may be built from a URL no one showed first: a playlist's segment).
    init(_ error: Error, rules: URLRules) {
        let mapped = APIError(error)
        self.init(status: mapped.status, code: mapped.code, message: rules.scrubbed(mapped.message))
    }

    /// What a library error means for a client of the API: every type mapped on purpose.
    private init(_ error: Error) {
        switch error {
        case let e as APIError:
            self = e
        case let e as FetchError:
            switch e {
            case .addressRefused, .redirectRefused, .unsupportedScheme:
                self = APIError(status: 403, code: "origin_refused", message: e.description)
            case .timeout:
                self = APIError(status: 504, code: "origin_timeout", message: e.description)
            case .cancelled:
                self = APIError(status: 503, code: "cancelled", message: e.description)
            default:
                self = APIError(status: 502, code: "origin_error", message: e.description)
            }
        case let e as SourceError:
            switch e {
            case .invalidURL, .unsupportedInput:
                self = APIError(status: 400, code: "bad_url", message: e.description)
            case .inconsistentOrigin, .versionChanged:
                self = APIError(status: 502, code: "origin_error", message: e.description)
            case .offlineMiss, .fileNotFound, .fileUnreadable, .notKept:
                self = APIError(status: 500, code: "cache_error", message: e.description)
            case .memoryFull:
                self = APIError(status: 503, code: "unavailable", message: e.description)
            }
        case let e as MediaError:
            self =
                e == .interrupted
                ? APIError(status: 503, code: "cancelled", message: e.description)
                : APIError(status: 422, code: "not_media", message: e.description)
        case let e as FFmpegError:
            self = APIError(status: 422, code: "not_media", message: e.description)
        case let e as FFmpegUnavailable:
            self = APIError(status: 500, code: "ffmpeg_unavailable", message: e.description)
        case is CacheError, is SQLiteError, is OutputError:
            self = APIError(status: 500, code: "storage_error", message: "\(error)")
        case let e as PostgresError:
            // Out of reach (a restart, a failover): worth a retry, as the front's clients know 503.
            self = APIError(status: 503, code: "job_store_unavailable", message: e.message)
        default:
            self = APIError(status: 500, code: "internal", message: "\(error)")
        }
    }
}
