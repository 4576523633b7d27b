import ByteSources
import Foundation
import MediaKit

/// What a job does, parsed and checked from its request body. The stored spec is that body, so a
/// restarted service parses it again the same way.
enum JobSpec: Sendable {
    case prefetch(urls: [String], window: PlaybackWindow, stream: StreamPrefetchJob, players: [PlayerProfile])
    case thumbnails(urls: [String], options: ThumbnailOptions)

    var type: JobType {
        switch self {
        case .prefetch: return .prefetch
        case .thumbnails: return .thumbnails
        }
    }

    var urls: [String] {
        switch self {
        case .prefetch(let urls, _, _, _), .thumbnails(let urls, _): return urls
        }
    }

    static let prefetchKeys: Set<String> = [
        "type", "url", "urls", "start", "seconds", "tracks", "variant", "first_segment", "for",
    ]
    static let thumbnailKeys: Set<String> = [
        "type", "url", "urls", "every", "count", "at", "width", "height",
        "format", "quality", "sprite", "accurate", "storyboard", "skip_black",
    ]

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
                self = .thumbnails(urls: urls, options: options)
            }
        } catch let invalid as InvalidOption {
            throw APIError.badRequest(invalid.shown { "\"\($0)\"" })
        }
    }
}
