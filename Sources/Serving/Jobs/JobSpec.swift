import ByteSources
import Foundation
import MediaKit

/// What a job does, parsed and checked from its request body. The stored spec is that body, so a
/// restarted service parses it again the same way.
enum JobSpec: Sendable {
    case prefetch(urls: [String], window: PlaybackWindow, stream: StreamPrefetchJob, players: [PlayerProfile])
    /// `output`: an http(s) folder URL each file is also `PUT` below (`<output><n>/<name>`).
    case thumbnails(urls: [String], options: ThumbnailOptions, output: String?)

    var type: JobType {
        switch self {
        case .prefetch: return .prefetch
        case .thumbnails: return .thumbnails
        }
    }

    var urls: [String] {
        switch self {
        case .prefetch(let urls, _, _, _), .thumbnails(let urls, _, _): return urls
        }
    }

    static let prefetchKeys: Set<String> = [
        "type", "url", "urls", "start", "seconds", "tracks", "variant", "first_segment", "for",
    ]
    static let thumbnailKeys: Set<String> = [
        "type", "url", "urls", "every", "count", "at", "width", "height",
        "format", "quality", "sprite", "accurate", "storyboard", "skip_black", "output",
    ]

    /// The URLs the service fetches from or sends to: the inputs, and a thumbnail job's `output`.
    var remoteURLs: [String] {
        if case .thumbnails(let urls, _, let output?) = self { return urls + [output] }
        return urls
    }

    /// Parses a `POST /v1/jobs` body; every problem is a 400 naming the member.
    init(body: [UInt8], limits: ServiceLimits) throws {
        let object = try RequestObject(body)
        guard let type = try object.string("type").flatMap(JobType.init) else {
            throw APIError.badRequest("\"type\" must be \"prefetch\" or \"thumbnails\"")
        }
        let allowed = type == .prefetch ? JobSpec.prefetchKeys : JobSpec.thumbnailKeys
        if let unknown = object.keys.subtracting(allowed).sorted().first {
            throw APIError.badRequest("unknown member \"\(unknown)\" for a \(type.rawValue) job")
        }
        var urls = try object.strings("url") ?? []
        urls += try object.strings("urls") ?? []
        guard !urls.isEmpty else { throw APIError.badRequest("a job needs \"url\": a URL or an array of URLs") }
        if let long = urls.first(where: { $0.utf8.count > limits.maxURLLength }) {
            throw APIError(
                status: 414, code: "url_too_long",
                message:
                    "a URL of the job is \(long.utf8.count) bytes, longer than \(limits.maxURLLength)")
        }
        guard urls.count <= limits.maxItemsPerJob else {
            throw APIError.badRequest(
                "a job may hold at most \(limits.maxItemsPerJob) URLs; this one has \(urls.count)")
        }
        do {
            switch type {
            case .prefetch:
                var stream = StreamPrefetchJob()
                if let text = try object.string("variant") {
                    guard let pick = VariantPick(text) else {
                        throw APIError.badRequest(
                            "\"variant\" must be \"best\", \"worst\" or a bandwidth, got \"\(text)\"")
                    }
                    stream.pick = pick
                }
                stream.firstSegment = try object.boolean("first_segment") ?? false
                self = .prefetch(
                    urls: urls,
                    window: try PlaybackWindow(
                        start: object.number("start"), seconds: object.number("seconds"),
                        tracks: object.string("tracks")), stream: stream,
                    players: try object.string("for").map(PlayerProfile.named) ?? PlayerProfile.known)
            case .thumbnails:
                var request = ThumbnailOptions.Request()
                request.every = try object.number("every")
                request.count = try object.integer("count", in: Int.min...Int.max)
                request.at = try object.numbers("at")
                request.width = try object.integer("width", in: Int.min...Int.max)
                request.height = try object.integer("height", in: Int.min...Int.max)
                request.format = try object.string("format")
                request.quality = try object.integer("quality", in: Int.min...Int.max)
                request.accurate = try object.boolean("accurate") ?? false
                if let (on, grid) = try object.flagOrString("sprite"), on { request.sprite = grid ?? "" }
                request.storyboard = try object.string("storyboard")
                request.skipBlack = try object.boolean("skip_black") ?? false
                var options = try ThumbnailOptions(validating: request)
                // The job's limit is shared out between its URLs.
                options.limit = max(1, limits.maxThumbnailsPerJob / urls.count)
                if case .count(let n) = options.times, n * urls.count > limits.maxThumbnailsPerJob {
                    throw APIError.badRequest(
                        "a job may make at most \(limits.maxThumbnailsPerJob) thumbnails; "
                            + "\(n) for each of \(urls.count) URLs is more")
                }
                if case .at(let list) = options.times, list.count * urls.count > limits.maxThumbnailsPerJob {
                    throw APIError.badRequest("a job may make at most \(limits.maxThumbnailsPerJob) thumbnails")
                }
                self = .thumbnails(urls: urls, options: options, output: try JobSpec.output(object, limits: limits))
            }
        } catch let invalid as InvalidOption {
            throw APIError.badRequest(invalid.shown { "\"\($0)\"" })
        }
    }

    /// `"output"`: an http or https URL of a folder (its path ends in `/`), a query allowed (a
    /// presigned prefix), no fragment.
    private static func output(_ object: RequestObject, limits: ServiceLimits) throws -> String? {
        guard let text = try object.string("output") else { return nil }
        guard text.utf8.count <= limits.maxURLLength else {
            throw APIError(
                status: 414, code: "url_too_long",
                message: "\"output\" is \(text.utf8.count) bytes, longer than \(limits.maxURLLength)")
        }
        guard let parts = URLComponents(string: text), ["http", "https"].contains(parts.scheme?.lowercased() ?? ""),
            parts.host?.isEmpty == false, parts.percentEncodedPath.hasSuffix("/"), parts.fragment == nil
        else {
            throw APIError.badRequest(
                "\"output\" must be an http or https URL of a folder, ending in /: each file is PUT below it")
        }
        return text
    }

    /// Where one file of item `item` goes below `output`: the path gets `<item>/<name>`, the
    /// query (a signature) stays.
    static func destination(output: String, item: String, name: String) -> String {
        guard var parts = URLComponents(string: output) else { return output }
        parts.percentEncodedPath +=
            item + "/" + (name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name)
        return parts.string ?? output
    }
}
