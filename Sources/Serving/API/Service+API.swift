import ByteSources
import Caching
import Foundation
import MediaKit
import RangeFetch
import Reports
import Support
import URLSupport

/// The JSON endpoints: probe, jobs and cache.
extension Service {
    // MARK: Probe

    /// `GET /v1/probe?url=URL`: the object `mprobe probe --json` prints; with `&of=ffprobe`, what
    /// `mprobe probe --of ffprobe` prints (ffprobe's `-show_format -show_streams` JSON, its layout).
    /// An HLS playlist: the object `mprobe probe --json` prints for it, `&variants=` as `--variants`.
    func probe(_ request: HTTPRequest) throws -> HTTPResponse {
        let output = request.query["of"] ?? "mprobe"
        guard output == "mprobe" || output == "ffprobe" else {
            throw APIError.badRequest("of must be mprobe or ffprobe")
        }
        var streams = StreamProber()
        if let text = request.query["variants"] {
            guard let choice = VariantChoice(text) else {
                throw APIError.badRequest("variants must be all, best or a count")
            }
            streams.variants = choice
        }
        let url = try originURL(request)
        return try opening(request) { job in
            if output == "ffprobe" { return json(text: FFprobeReport.text(try Prober().details(url, session: job))) }
            switch try Prober().probe(url, session: job, streams: streams) {
            case .media(let result): return json(ProbeReport.json(result))
            case .stream(let result): return json(StreamProbeReport.json(result))
            }
        }
    }

    /// Runs `body`, which opens media with libavformat, within `ServiceLimits.maxConcurrentProbes`
    /// (503 past it), on a session that ends when the service stops or the client hangs up.
    private func opening(_ request: HTTPRequest, _ body: (MediaSession) throws -> HTTPResponse) throws -> HTTPResponse {
        guard probes.add(1, ordering: .relaxed).newValue <= config.limits.maxConcurrentProbes else {
            probes.subtract(1, ordering: .relaxed)
            throw APIError.unavailable(
                "\(config.limits.maxConcurrentProbes) probes are running already; try again shortly")
        }
        defer { probes.subtract(1, ordering: .relaxed) }
        let stopping = self.stopping
        return try body(session.job(cancellation: Cancellation(when: { stopping.isCancelled || request.clientGone() })))
    }

    // MARK: Cache

    /// `GET /v1/cache/ranges?url=`: the object `mprobe cache ranges --json` prints.
    func cacheRanges(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let url = request.query["url"], !url.isEmpty else {
            throw APIError.badRequest("the url parameter is missing")
        }
        let resource = try cache.resource(for: url)
        guard resource != nil else {
            return json(CacheReport.ranges(url: cache.urlRules.shown(url), resource: nil, media: nil))
        }
        return try opening(request) { _ in
            // Buffered times and the moov need the cached header; without it they are unknown (null), not an error.
            let offline = MediaSession(cache: cache, offline: true)
            let media = try? BufferedRanges.cachedMedia(url, session: offline)
            let stream = media == nil ? StreamBuffer.cached(url, session: offline) : nil
            return json(
                CacheReport.ranges(url: cache.urlRules.shown(url), resource: resource, media: media, stream: stream))
        }
    }

    /// `DELETE /v1/cache?url=`.
    func removeFromCache(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let url = request.query["url"], !url.isEmpty else {
            throw APIError.badRequest("the url parameter is missing")
        }
        let removed = try cache.remove(url: url)
        session.forget(url)  // the proxy's open entry must not go on serving the bytes just removed
        return json(.object([("url", .string(cache.urlRules.shown(url))), ("removed", .bool(removed))]))
    }

    // MARK: Jobs

    /// `POST /v1/jobs`: 202 with the queued job.
    func submitJob(_ request: HTTPRequest) throws -> HTTPResponse {
        guard request.body.count <= config.limits.maxJobRequestBytes else {
            throw APIError(
                status: 413, code: "too_large",
                message: "a job's body may be at most \(config.limits.maxJobRequestBytes) bytes")
        }
        let spec = try JobSpec(body: request.body, limits: config.limits)
        for url in spec.remoteURLs { try checkOrigin(url) }
        guard try store.count(state: .queued) < config.limits.maxQueuedJobs else {
            throw APIError.unavailable("\(config.limits.maxQueuedJobs) jobs are waiting already; try again later")
        }
        var progress = JobProgress()
        progress.items = spec.urls.count
        // The store keeps the request with its URLs as shown: signatures are secrets, never
        // stored. The runner keeps the real request in memory; after a restart a job whose URLs
        // lost a secret cannot run again and says so.
        let id = UUID().uuidString.lowercased()
        let body = try RequestObject(request.body)
        let shown = try body.mappingURLs { cache.urlRules.shown($0) }
        var job = JobRecord(
            id: id, type: spec.type, spec: shown, state: .queued, progress: progress, result: nil,
            errorCode: nil, errorMessage: nil, created: Date(), started: nil, finished: nil)
        // `?url=` is what a consistent-hash front routes on: the job runs on the node its URL's
        // players reach, so that a prefetch warms the cache they read (docs/scale-out.md).
        if let routed = request.query["url"] {
            guard spec.urls == [routed] else {
                throw APIError.badRequest("?url= must be the job's only URL: it is what a front routes the job by")
            }
            job.node = JobLease.process
        }
        // Only this node keeps the secrets the store does not: it runs the job while it lives.
        if shown != (try body.mappingURLs { $0 }) {
            runner.remember(id, request: request.body)
            job.node = JobLease.process
        }
        // As stored: a shared store gives it the database's time.
        let stored = try store.insert(job)
        runner.jobQueued()
        var response = json(stored.json, status: 202)
        response.headers.append(("Location", "/v1/jobs/\(job.id)"))
        return response
    }

    /// `GET /v1/jobs?state=&limit=&cursor=`: newest first, a page at a time. A page holds at most
    /// `limit` jobs and `ServiceLimits.maxListingBytes` of them; `next_cursor` asks for the next.
    func listJobs(_ request: HTTPRequest) throws -> HTTPResponse {
        var state: JobState?
        if let text = request.query["state"] {
            guard let parsed = JobState(rawValue: text) else {
                throw APIError.badRequest(
                    "state must be one of \(JobState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            state = parsed
        }
        var limit = 100
        if let text = request.query["limit"] {
            guard let n = Int(text), (1...1000).contains(n) else { throw APIError.badRequest("limit must be 1...1000") }
            limit = n
        }
        var before: Int64?
        if let text = request.query["cursor"] {
            guard text.hasPrefix("j"), let seq = Int64(text.dropFirst()), seq > 0 else {
                throw APIError.badRequest("cursor must be a next_cursor of an earlier page")
            }
            before = seq
        }
        var page: [JSON] = [], bytes = 0, lastSeq: Int64 = 0, next: String?
        for job in try store.jobs(state: state, before: before, limit: limit + 1) {
            let shown = job.json
            let size = shown.text.utf8.count
            if page.count == limit || (!page.isEmpty && bytes + size > config.limits.maxListingBytes) {
                next = "j\(lastSeq)"  // the page holds a job: limit is at least 1
                break
            }
            page.append(shown)
            bytes += size
            lastSeq = job.seq
        }
        return json(.object([("jobs", .array(page)), ("next_cursor", next.map(JSON.string) ?? .null)]))
    }

    /// A job id as the service makes them (a lowercase UUID, or what an older service made:
    /// hex digits and dashes); anything else names no job, and is never sent to the store.
    static func isJobID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || $0 == 45 }
    }

    func showJob(_ id: String) throws -> HTTPResponse {
        guard Service.isJobID(id) else { throw APIError.notFound("no job \(id)") }
        guard let job = try store.job(id: id) else { throw APIError.notFound("no job \(id)") }
        return json(job.json)
    }

    /// `DELETE /v1/jobs/{id}`: a queued job is cancelled at once, a running one as soon as it
    /// notices; a finished one is left as it is (409).
    func cancelJob(_ id: String) throws -> HTTPResponse {
        guard Service.isJobID(id) else { throw APIError.notFound("no job \(id)") }
        switch try store.cancel(id: id) {
        case .notFound:
            throw APIError.notFound("no job \(id)")
        case .cancelled:
            return try showJob(id)
        case .requested:
            // Here at once if it runs here; on another node through the store's notice or lease.
            runner.cancelRunning(id: id)
            // The worker records the end; answer with what is known now.
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline, let now = try store.job(id: id), !now.state.isFinal {
                Thread.sleep(forTimeInterval: 0.02)
            }
            return try showJob(id)
        case .finished(let state):
            throw APIError(
                status: 409, code: "finished",
                message: "job \(id) has already \(state == .done ? "finished" : state.rawValue)")
        }
    }

    /// `GET /v1/jobs/{id}/files/{n}/{name}`: a thumbnail job's images, sprites, VTT and manifest,
    /// for its n-th URL. A VTT asked for with `?token=` gets that token on its sprite references,
    /// so a player that cannot set headers can follow them. Nothing is read through a link. With
    /// a shared job store the files are read from it, so every node serves every job's files.
    func jobFile(id: String, name: [String], request: HTTPRequest) throws -> HTTPResponse {
        let safe = name.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".") && !$0.contains("/") }
        guard safe, Service.isJobID(id), name.count == 2, try store.job(id: id) != nil,
            var bytes =
                try store.keepsFiles
                ? store.file(id: id, item: name[0], name: name[1])
                : JobFiles.read(root: runner.filesDirectory, [id] + name)
        else {
            throw APIError.notFound("no file \(name.joined(separator: "/")) in job \(id)")
        }
        let file = name.last ?? ""
        if file.hasSuffix(".vtt"), let token = request.query["token"] {
            let text = String(decoding: bytes, as: UTF8.self)
            bytes = Array(Service.withToken(vtt: text, token: token).utf8)
        }
        // Served in the dashboard's origin: never sniffed, never able to run anything there.
        return HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", Service.mediaType(of: file)), ("Cache-Control", "no-cache"),
                ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", "sandbox; default-src 'none'"),
            ],
            body: .bytes(bytes))
    }

    /// Adds `?token=` to each cue's image reference (`sprite.jpg#xywh=...` → `sprite.jpg?token=T#xywh=...`).
    static func withToken(vtt: String, token: String) -> String {
        let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token
        return vtt.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let hash = line.firstIndex(of: "#"), line[..<hash].hasSuffix(".jpg") else { return String(line) }
            return line[..<hash] + "?token=" + encoded + line[hash...]
        }.joined(separator: "\n")
    }

    static func mediaType(of file: String) -> String {
        switch (file as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "webp": return "image/webp"
        case "vtt": return "text/vtt; charset=utf-8"
        case "json": return "application/json"
        default: return "application/octet-stream"
        }
    }
}
