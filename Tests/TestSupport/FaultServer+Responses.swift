import Foundation

/// What to send for one request, worked out from a `FaultBehavior` before any byte goes out.
struct ResponsePlan {
    var status: Int
    var headers: [(String, String)]
    /// The resource's bytes; `bodyRange` selects the part this response carries.
    var body: [UInt8]
    var bodyRange: Range<Int>
    /// Close the connection after this many body bytes (nil: send the whole `bodyRange`).
    var dropAfter: Int? = nil
    /// Pauses at body offsets (relative to the start of `bodyRange`).
    var stalls: [(offset: Int, seconds: Double)] = []
    /// Seconds to wait before sending the status line.
    var delay: Double = 0
    /// No Content-Length: the body ends when the connection closes.
    var closeDelimited = false
    /// A Content-Length to announce instead of the body's own length.
    var announcedLength: Int? = nil
    /// Send the body in one-byte steps at this rate.
    var dripBytesPerSecond: Int? = nil

    /// The announced Content-Length: the full selected range (even when a fault means fewer
    /// bytes will actually arrive), or what a `.fixed` response claims.
    var contentLength: Int { announcedLength ?? bodyRange.count }

    init(status: Int, headers: [(String, String)], body: [UInt8], bodyRange: Range<Int>? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyRange = bodyRange ?? 0..<body.count
    }

    static func text(_ status: Int, _ message: String, headers: [(String, String)] = []) -> ResponsePlan {
        ResponsePlan(
            status: status, headers: [("Content-Type", "text/plain")] + headers,
            body: Array(message.utf8))
    }
}

/// A parsed single `Range: bytes=...` header against a resource of known length.
enum ByteRangeRequest: Equatable {
    /// No Range header, a syntax we do not honor (e.g. several ranges), or nonsense:
    /// RFC 9110 lets a server ignore it and send 200.
    case none
    case unsatisfiable
    /// Half-open range of resource offsets.
    case satisfiable(Range<Int>)

    init(header: String?, total: Int) {
        guard let header else { self = .none; return }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { self = .none; return }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { self = .none; return }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // bytes=-n: the last n bytes.
            guard let n = Int(last), n >= 0 else { self = .none; return }
            guard n > 0, total > 0 else { self = .unsatisfiable; return }
            self = .satisfiable(max(0, total - n)..<total)
            return
        }
        guard let start = Int(first), start >= 0 else { self = .none; return }
        var end = total - 1
        if !last.isEmpty {
            guard let e = Int(last), e >= start else { self = .none; return }
            end = min(e, total - 1)
        }
        guard start < total else { self = .unsatisfiable; return }
        self = .satisfiable(start..<(end + 1))
    }
}

extension FaultBehavior {
    /// Resolves this behavior for `request`, the `index`-th request to its route.
    func plan(for request: HTTPRequestHead, index: Int) -> ResponsePlan {
        switch self {
        case let .serve(body, etag, lastModified, contentType):
            return Self.servePlan(
                body: body, etag: etag, lastModified: lastModified,
                contentType: contentType, request: request)

        case let .ignoreRanges(body):
            return ResponsePlan(status: 200, headers: [("Content-Type", "application/octet-stream")], body: body)

        case let .ignoreRangesWithoutLength(body):
            var plan = ResponsePlan(status: 200, headers: [("Content-Type", "application/octet-stream")], body: body)
            plan.closeDelimited = true
            return plan

        case let .status(code, retryAfter):
            var headers: [(String, String)] = []
            if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
            return .text(code, "status \(code)\n", headers: headers)

        case let .sequence(steps):
            guard !steps.isEmpty else { return .text(500, "empty sequence\n") }
            return steps[min(index, steps.count - 1)].plan(for: request, index: index)

        case let .dropAfter(bytes, then):
            var plan = then.plan(for: request, index: index)
            plan.dropAfter = min(max(0, bytes), plan.dropAfter ?? Int.max)
            return plan

        case let .stall(afterBytes, seconds, then):
            var plan = then.plan(for: request, index: index)
            plan.stalls.append((max(0, afterBytes), seconds))
            plan.stalls.sort { $0.offset < $1.offset }
            return plan

        case let .redirect(location, status):
            return .text(status, "redirecting to \(location)\n", headers: [("Location", location)])

        case let .wrongContentRange(body):
            let total = body.count
            guard case let .satisfiable(asked) = ByteRangeRequest(header: request.headers["range"], total: total) else {
                return Self.servePlan(
                    body: body, etag: "\"v1\"", lastModified: nil,
                    contentType: "application/octet-stream", request: request)
            }
            // Shift the whole range one byte later, staying inside the resource.
            let start = min(asked.lowerBound + 1, total - 1)
            let end = min(asked.upperBound + 1, total)
            let shifted = start..<max(end, start + 1)
            return ResponsePlan(
                status: 206,
                headers: [
                    ("Accept-Ranges", "bytes"),
                    ("Content-Type", "application/octet-stream"),
                    ("ETag", "\"v1\""),
                    ("Content-Range", "bytes \(shifted.lowerBound)-\(shifted.upperBound - 1)/\(total)"),
                ], body: body, bodyRange: shifted)

        case let .shortBody(body, missing):
            var plan = Self.servePlan(
                body: body, etag: "\"v1\"", lastModified: nil,
                contentType: "application/octet-stream", request: request)
            plan.dropAfter = max(0, plan.contentLength - max(0, missing))
            return plan

        case let .delay(seconds, then):
            var plan = then.plan(for: request, index: index)
            plan.delay += seconds
            return plan

        case let .fixed(status, headers, body, contentLength):
            var plan = ResponsePlan(status: status, headers: headers, body: body)
            if contentLength == -1 {
                plan.closeDelimited = true
            } else if let contentLength, contentLength != body.count {
                plan.announcedLength = contentLength
                plan.dropAfter = body.count  // what there is, then the connection closes
            }
            return plan

        case let .drip(rate, then):
            var plan = then.plan(for: request, index: index)
            plan.dripBytesPerSecond = max(1, rate)
            return plan
        }
    }

    static func servePlan(
        body: [UInt8], etag: String?, lastModified: String?, contentType: String,
        request: HTTPRequestHead
    ) -> ResponsePlan {
        let total = body.count
        var headers: [(String, String)] = [("Accept-Ranges", "bytes"), ("Content-Type", contentType)]
        if let etag { headers.append(("ETag", etag)) }
        if let lastModified { headers.append(("Last-Modified", lastModified)) }

        // If-Range: the range applies only if the client's validator still matches;
        // otherwise the resource changed and the client must get all of it.
        if let ifRange = request.headers["if-range"], ifRange != etag, ifRange != lastModified {
            return ResponsePlan(status: 200, headers: headers, body: body)
        }
        switch ByteRangeRequest(header: request.headers["range"], total: total) {
        case .none:
            return ResponsePlan(status: 200, headers: headers, body: body)
        case .unsatisfiable:
            return .text(
                416, "range not satisfiable\n",
                headers: [("Accept-Ranges", "bytes"), ("Content-Range", "bytes */\(total)")])
        case let .satisfiable(range):
            headers.append(("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"))
            return ResponsePlan(status: 206, headers: headers, body: body, bodyRange: range)
        }
    }
}
