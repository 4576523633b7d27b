import Foundation
import Serving
import TestSupport
import XCTest

/// The JSON API of `mprobe serve` over real sockets: probe, jobs, cache, auth, the origin guard,
/// limits and metrics, against nginx serving the project's samples.
final class ServiceAPITests: XCTestCase {
    var nginx: NginxServer!

    override func setUpWithError() throws {
        nginx = try NginxServer(root: samplesDirectory)
    }

    override func tearDown() {
        nginx.stop()
    }

    func testProbeAnswersWhatTheCLIPrints() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let reply = try HTTPClient.request("GET", service.url("/v1/probe", origin: nginx.url("/moov-at-end.mp4")))
        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertEqual(reply.headers["content-type"], "application/json")
        let probe = try reply.json()
        XCTAssertEqual(probe["url"] as? String, nginx.url("/moov-at-end.mp4"))
        XCTAssertEqual(probe["format"] as? String, "mov,mp4,m4a,3gp,3g2,mj2")
        XCTAssertEqual((probe["moov"] as? [String: Any])?["position"] as? String, "end")
        XCTAssertEqual((probe["tracks"] as? [Any])?.count, 2)
        let cli = try runProcess(
            try mprobeBinary(), [nginx.url("/moov-at-end.mp4"), "--json", "--cache-dir", service.dir.file("cli")])
        let expected = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(cli.stdout)) as? [String: Any])
        XCTAssertEqual(Set(probe.keys), Set(expected.keys), "the same object as mprobe probe --json")
        func canonical(_ value: Any?) throws -> String {
            String(
                decoding: try JSONSerialization.data(withJSONObject: [value ?? NSNull()], options: [.sortedKeys]),
                as: UTF8.self)
        }
        for key in ["size", "format", "duration", "bit_rate", "moov", "fragmented", "tracks", "tags"] {
            XCTAssertEqual(try canonical(probe[key]), try canonical(expected[key]), key)
        }
        let missing = try HTTPClient.request("GET", service.url("/v1/probe", origin: nginx.url("/missing.mp4")))
        XCTAssertEqual(missing.status, 502)
        XCTAssertEqual((try missing.json()["error"] as? [String: Any])?["code"] as? String, "origin_error")
        XCTAssertTrue(missing.text.contains("HTTP 404"), missing.text)
        XCTAssertEqual(try service.get("/v1/probe").status, 400)
    }

    func testAPrefetchJobRunsAndIsListed() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let body = #"{"type": "prefetch", "url": "\#(nginx.url("/moov-at-end.mp4"))", "start": 1, "seconds": 2}"#
        let submitted = try service.postJob(body)
        XCTAssertEqual(submitted.status, 202, submitted.text)
        let created = try submitted.json()
        XCTAssertEqual(created["state"] as? String, "queued")
        let id = try XCTUnwrap(created["id"] as? String)
        XCTAssertEqual(submitted.headers["location"], "/v1/jobs/\(id)")
        let job = try service.waitForJob(id)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        let progress = try XCTUnwrap(job["progress"] as? [String: Any])
        XCTAssertEqual(progress["items_done"] as? Int, 1)
        let items = try XCTUnwrap((job["result"] as? [String: Any])?["items"] as? [[String: Any]])
        XCTAssertEqual(items.first?["ok"] as? Bool, true)
        XCTAssertNotNil((items.first?["prefetch"] as? [String: Any])?["sample_ranges"])
        for key in ["created", "started", "finished"] {
            XCTAssertNotNil(isoDate(job[key] as? String ?? ""), "\(key): \(job[key] ?? "nil")")
        }
        let done = try service.get("/v1/jobs?state=done").json()
        XCTAssertEqual((done["jobs"] as? [[String: Any]])?.map { $0["id"] as? String }, [id])
        XCTAssertEqual((try service.get("/v1/jobs?state=queued").json()["jobs"] as? [Any])?.count, 0)
        XCTAssertEqual(
            try HTTPClient.request("DELETE", service.url("/v1/jobs/\(id)")).status, 409, "a finished job stays finished"
        )
        XCTAssertEqual(try service.get("/v1/jobs/nope").status, 404)
        // An id with anything a job id cannot hold (a NUL would end it early in PostgreSQL) names none.
        XCTAssertEqual(try service.get("/v1/jobs/\(id)%00junk").status, 404)
        XCTAssertEqual(try HTTPClient.request("DELETE", service.url("/v1/jobs/\(id)%00")).status, 404)
    }

    func testAThumbnailJobServesItsFilesAndAStoryboardThatPointsBackHere() throws {
        let service = try ServiceHarness(token: "s3cret")
        defer { service.stop() }
        let auth = ["Authorization": "Bearer s3cret"]
        let body =
            #"{"type": "thumbnails", "url": ["\#(nginx.url("/faststart.mp4"))", "\#(nginx.url("/moov-at-end.mp4"))"], "count": 4, "width": 160, "sprite": "2x2"}"#
        let id = try XCTUnwrap(try service.postJob(body, headers: auth).json()["id"] as? String)
        let job = try service.waitForJob(id, headers: auth)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        let items = try XCTUnwrap((job["result"] as? [String: Any])?["items"] as? [[String: Any]])
        XCTAssertEqual(items.count, 2)
        for item in items {
            let files = try XCTUnwrap(item["files"] as? String)
            let thumbnails = try XCTUnwrap(item["thumbnails"] as? [[String: Any]])
            XCTAssertEqual(thumbnails.count, 4)
            let image = try service.get(files + (thumbnails[0]["file"] as? String ?? ""), headers: auth)
            XCTAssertEqual(image.status, 200)
            XCTAssertEqual(image.headers["content-type"], "image/jpeg")
            XCTAssertEqual(Array(image.body.prefix(2)), [0xFF, 0xD8], "a JPEG")
            // A player fetches the VTT with ?token= and follows its cues to the sprite.
            let vtt = try HTTPClient.request("GET", service.url(files + "thumbs.vtt?token=s3cret"))
            XCTAssertEqual(vtt.status, 200)
            XCTAssertTrue(vtt.text.hasPrefix("WEBVTT"), vtt.text)
            let cue = try XCTUnwrap(vtt.text.split(separator: "\n").first { $0.contains("#xywh=") })
            let reference = String(cue.split(separator: "#")[0])
            XCTAssertTrue(reference.contains("token=s3cret"), reference)
            let sprite = try HTTPClient.request(
                "GET",
                URL(string: reference, relativeTo: URL(string: service.url(files + "thumbs.vtt")))!.absoluteString)
            XCTAssertEqual(sprite.status, 200)
            XCTAssertEqual(Array(sprite.body.prefix(2)), [0xFF, 0xD8])
        }
        XCTAssertEqual(try service.get("/v1/jobs/\(id)/files/1/../../jobs.sqlite", headers: auth).status, 404)
        XCTAssertEqual(try service.get("/v1/jobs/\(id)/files/1/thumbs.vtt").status, 401, "files need the token too")
    }

    func testSignedURLsRunButTheirSignaturesAreNeverStored() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let signed = nginx.url("/faststart.mp4") + "?X-Amz-Credential=credSECRET&X-Amz-Signature=sigSECRET"
        let submitted = try service.postJob(#"{"type": "prefetch", "url": "\#(signed)", "seconds": 1}"#)
        XCTAssertEqual(submitted.status, 202, submitted.text)
        let id = try XCTUnwrap(try submitted.json()["id"] as? String)
        let job = try service.waitForJob(id)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        let text = try service.get("/v1/jobs/\(id)").text + (try service.get("/v1/cache").text)
        XCTAssertFalse(text.contains("sigSECRET") || text.contains("credSECRET"), text)
        for name in try FileManager.default.contentsOfDirectory(atPath: service.dir.file("cache"))
        where name.hasSuffix(".sqlite")
            || name.hasSuffix("-wal")
        {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: service.dir.file("cache/" + name)))
            XCTAssertNil(bytes.range(of: Data("sigSECRET".utf8)), "\(name) holds the signature")
        }
        XCTAssertFalse(service.log.joined().contains("sigSECRET"))
    }

    func testCancellingAQueuedAndARunningJob() throws {
        let slow = try FaultServer()
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/moov-at-end.mp4")))
        slow.route("/slow.mp4", .stall(afterBytes: 1000, seconds: 30, then: .serve(body: media)))
        let service = try ServiceHarness(workers: 1)
        defer { service.stop() }
        let running = try XCTUnwrap(
            try service.postJob(#"{"type": "prefetch", "url": "\#(slow.url("/slow.mp4"))"}"#).json()["id"] as? String)
        let queued = try XCTUnwrap(
            try service.postJob(#"{"type": "prefetch", "url": "\#(slow.url("/slow.mp4"))"}"#).json()["id"] as? String)
        let deadline = Date().addingTimeInterval(10)
        while try service.get("/v1/jobs/\(running)").json()["state"] as? String != "running", Date() < deadline {
            usleep(20_000)
        }
        let cancelledQueued = try HTTPClient.request("DELETE", service.url("/v1/jobs/\(queued)")).json()
        XCTAssertEqual(cancelledQueued["state"] as? String, "cancelled")
        let started = Date()
        _ = try HTTPClient.request("DELETE", service.url("/v1/jobs/\(running)"))
        let job = try service.waitForJob(running, timeout: 10)
        XCTAssertEqual(job["state"] as? String, "cancelled", "\(job)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "a stalled fetch stops when its job is cancelled")
    }

    /// A DELETE right after the POST can meet a job a worker has claimed but not yet registered:
    /// that cancel used to be lost (200 "running", and the job ran to its end).
    func testACancelRightAfterSubmittingIsNeverLost() throws {
        let slow = try FaultServer()
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/moov-at-end.mp4")))
        slow.route("/slow.mp4", .stall(afterBytes: 1000, seconds: 30, then: .serve(body: media)))
        let service = try ServiceHarness(workers: 2)
        defer { service.stop() }
        for _ in 0..<25 {  // the race is narrow: many tries make it likely to be met
            let id = try XCTUnwrap(
                try service.postJob(#"{"type": "prefetch", "url": "\#(slow.url("/slow.mp4"))"}"#).json()["id"]
                    as? String)
            _ = try HTTPClient.request("DELETE", service.url("/v1/jobs/\(id)"))
            XCTAssertEqual(try service.waitForJob(id, timeout: 10)["state"] as? String, "cancelled", id)
        }
    }

    func testTheTokenIsRequiredAndNeverLogged() throws {
        let service = try ServiceHarness(token: "tok-123")
        defer { service.stop() }
        XCTAssertEqual(try service.get("/healthz").status, 200, "liveness needs no token")
        let denied = try service.get("/v1/cache")
        XCTAssertEqual(denied.status, 401)
        XCTAssertEqual(denied.headers["www-authenticate"], "Bearer")
        XCTAssertEqual(try service.get("/v1/cache", headers: ["Authorization": "Bearer tok-12"]).status, 401)
        XCTAssertEqual(try service.get("/v1/cache", headers: ["Authorization": "Bearer tok-123"]).status, 200)
        XCTAssertEqual(
            try service.get("/v1/cache?token=tok-123").status, 401, "query tokens only where players need them")
        let streamed = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: nginx.url("/faststart.mp4"), extra: "&token=tok-123"))
        XCTAssertEqual(streamed.status, 200)
        XCTAssertEqual(try service.get("/metrics", headers: ["Authorization": "Bearer tok-123"]).status, 200)
        XCTAssertTrue(
            service.waitForLog { $0.contains { $0.hasPrefix("GET /metrics") } }, service.log.joined(separator: "\n"))
        XCTAssertFalse(service.log.joined(separator: "\n").contains("tok-123"), service.log.joined(separator: "\n"))
        XCTAssertTrue(
            service.log.contains { $0.hasPrefix("GET /v1/stream?url=") && $0.contains(" 200 ") },
            service.log.joined(separator: "\n"))
        // A client cannot write log lines of its own.
        _ = try HTTPClient.request(
            "GET", service.url("/v1/probe", origin: "http://x/\nGET /forged 200 1 B 1 ms"),
            headers: ["Authorization": "Bearer tok-123"])
        // Nor terminal escapes or a carriage return in the method (refused, and logged escaped).
        for method in ["G\u{1B}[31mET", "X\rPOST\t/v1/jobs", "X\u{1B}]0;owned\u{07}", "X\u{9B}2K"] {
            let connection = try RawHTTPConnection(port: service.service.port)
            connection.send(Array("\(method) /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            _ = connection.read(atLeast: 1, timeout: 2)
        }
        XCTAssertTrue(
            service.waitForLog { $0.contains { $0.contains("2K /healthz") } },
            service.log.joined(separator: "\n").debugDescription)
        XCTAssertFalse(
            service.log.contains { $0.hasPrefix("GET /forged") || $0.contains("\n") },
            service.log.joined(separator: "\n"))
        XCTAssertFalse(
            service.log.contains { line in
                line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
            },
            service.log.joined(separator: "\n").debugDescription)
        XCTAssertTrue(
            service.log.contains { $0.hasPrefix("G%1B[31mET /healthz") },
            service.log.joined(separator: "\n").debugDescription)
    }

    func testTheOriginGuardRefusesInternalAddressesUnlessAllowed() throws {
        let allowed = try FaultServer(), refused = try FaultServer()
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/faststart.mp4")))
        allowed.route("/v.mp4", .serve(body: media))
        allowed.route("/hop.mp4", .redirect(to: refused.url("/v.mp4")))
        refused.route("/v.mp4", .serve(body: media))
        let service = try ServiceHarness(allowHosts: ["127.0.0.1:\(allowed.port)"])
        defer { service.stop() }
        XCTAssertEqual(
            try HTTPClient.request("GET", service.url("/v1/probe", origin: allowed.url("/v.mp4"))).status, 200)
        for origin in [
            refused.url("/v.mp4"), "http://localhost:\(refused.port)/v.mp4", "http://[::1]:\(refused.port)/v.mp4",
            "file:///etc/passwd", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/x.mp4",
        ] {
            let reply = try HTTPClient.request("GET", service.url("/v1/probe", origin: origin))
            XCTAssertEqual(reply.status, 403, "\(origin): \(reply.text)")
        }
        // Allowed at first, refused at the redirect hop: the check is on every connection.
        let hop = try HTTPClient.request("GET", service.url("/v1/stream", origin: allowed.url("/hop.mp4")))
        XCTAssertEqual(hop.status, 403, hop.text)
        let job = try XCTUnwrap(
            try service.postJob(#"{"type": "prefetch", "url": "\#(allowed.url("/hop.mp4"))"}"#).json()["id"] as? String)
        let finished = try service.waitForJob(job)
        XCTAssertEqual((finished["error"] as? [String: Any])?["code"] as? String, "origin_refused", "\(finished)")
        XCTAssertTrue(refused.requests.isEmpty, "no request reached the refused origin")
        XCTAssertEqual(try service.postJob(#"{"type": "prefetch", "url": "\#(refused.url("/v.mp4"))"}"#).status, 403)
        // A thumbnail job's output is a URL the service sends to: the same guard, and it must be an
        // http(s) folder.
        let thumbs = #"{"type": "thumbnails", "url": "\#(allowed.url("/v.mp4"))", "count": 1, "output": "#
        XCTAssertEqual(try service.postJob(thumbs + #""\#(refused.url("/up/"))"}"#).status, 403)
        for bad in ["ftp://127.0.0.1/up/", allowed.url("/up"), allowed.url("/up/#x"), "http:///up/", "/up/"] {
            let reply = try service.postJob(thumbs + #""\#(bad)"}"#)
            XCTAssertEqual(reply.status, 400, "\(bad): \(reply.text)")
        }
        XCTAssertEqual(
            try service.postJob(
                #"{"type": "prefetch", "url": "\#(allowed.url("/v.mp4"))", "output": "\#(allowed.url("/up/"))"}"#
            )
            .status, 400, "a prefetch makes no files")
        XCTAssertEqual(
            try HTTPClient.request(
                "GET", service.url("/v1/probe", origin: "http://u:pw@127.0.0.1:\(allowed.port)/v.mp4")
            ).status, 400)
    }

    /// An origin that redirects to the service's own proxy used to nest a request per hop (about
    /// 300 deep) and saturate the service: the service's own requests are marked, and refused.
    func testAnOriginRedirectingBackToTheServiceIsOneRefusedHop() throws {
        let origin = try FaultServer()
        let service = try ServiceHarness()
        defer { service.stop() }
        origin.route("/loop.mp4", .redirect(to: service.url("/v1/stream", origin: origin.url("/loop.mp4"))))
        let reply = try HTTPClient.request("GET", service.url("/v1/stream", origin: origin.url("/loop.mp4")))
        XCTAssertNotEqual(reply.status, 200)
        _ = service.waitForLog { $0.filter { $0.hasPrefix("GET /v1/stream") }.count >= 2 }
        let nested = service.log.filter { $0.hasPrefix("GET /v1/stream") }
        XCTAssertEqual(nested.count, 2, "the player's request and one refused hop, not retried: \(service.log)")
        XCTAssertEqual(nested.filter { $0.contains(" 508 ") }.count, 1, "\(service.log)")
    }

    func testLimitsAreClearErrors() throws {
        var limits = ServiceLimits()
        limits.maxItemsPerJob = 2
        limits.maxRequestBody = 4096
        limits.maxQueuedJobs = 1
        limits.maxURLLength = 200
        limits.maxThumbnailsPerJob = 10
        let service = try ServiceHarness(limits: limits, workers: 1)
        defer { service.stop() }
        let url = nginx.url("/faststart.mp4")
        XCTAssertEqual(
            try service.postJob(#"{"type": "prefetch", "url": ["\#(url)", "\#(url)", "\#(url)"]}"#).status, 400)
        XCTAssertEqual(try service.postJob(#"{"type": "thumbnails", "url": "\#(url)", "count": 11}"#).status, 400)
        XCTAssertEqual(try service.postJob(String(repeating: " ", count: 5000) + "{}").status, 413)
        // An announced body over the limit is refused before the client sends it ("100 Continue"
        // was answered first, and the body read, before).
        let waiting = try RawHTTPConnection(port: service.service.port)
        waiting.send(
            Array(
                "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\nExpect: 100-continue\r\n\r\n"
                    .utf8))
        let answer = String(decoding: waiting.read(atLeast: 12, timeout: 5), as: UTF8.self)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 413"), answer)
        XCTAssertEqual(try service.postJob(#"{"type": "prefetch", "url": "\#(url)", "seconds": -1}"#).status, 400)
        XCTAssertEqual(try service.postJob(#"{"type": "prefetch", "url": "\#(url)", "bogus": 1}"#).status, 400)
        XCTAssertEqual(try service.postJob(#"{"type": "transcode", "url": "\#(url)"}"#).status, 400)
        XCTAssertEqual(try service.postJob("not json").status, 400)
        let utf16 = Array(#"{"type": "prefetch", "url": "\#(url)"}"#.data(using: .utf16LittleEndian)!)
        XCTAssertEqual(
            try HTTPClient.request("POST", service.url("/v1/jobs"), body: utf16).status, 400, "JSON is UTF-8")
        let long = service.url("/v1/probe", origin: url + "?" + String(repeating: "a", count: 300))
        XCTAssertEqual(try HTTPClient.request("GET", long).status, 414)
        XCTAssertEqual(try HTTPClient.request("PUT", service.url("/v1/jobs")).status, 405)
        XCTAssertEqual(try service.get("/v1/nothing").status, 404)
        let error = try service.postJob("{}").json()["error"] as? [String: Any]
        XCTAssertNotNil(error?["code"] as? String)
        XCTAssertNotNil(error?["message"] as? String)
    }

    /// Finished jobs and their files do not pile up: beyond the newest `keptFinishedJobs` they are
    /// removed (a client submitting failing jobs in a loop grew jobs.sqlite without bound).
    func testFinishedJobsAndTheirFilesAreKeptWithinTheRetentionLimit() throws {
        var limits = ServiceLimits()
        limits.keptFinishedJobs = 2
        let service = try ServiceHarness(limits: limits, workers: 1)
        defer { service.stop() }
        var ids: [String] = []
        for _ in 0..<5 {
            let body = #"{"type": "thumbnails", "url": "\#(nginx.url("/faststart.mp4"))", "count": 1, "width": 64}"#
            let id = try XCTUnwrap(try service.postJob(body).json()["id"] as? String)
            XCTAssertEqual(try service.waitForJob(id)["state"] as? String, "done")
            ids.append(id)
        }
        let failing = try XCTUnwrap(
            try service.postJob(#"{"type": "prefetch", "url": "\#(nginx.url("/missing.mp4"))"}"#).json()["id"]
                as? String)
        XCTAssertEqual(try service.waitForJob(failing)["state"] as? String, "failed")
        let listed = try XCTUnwrap(try service.get("/v1/jobs").json()["jobs"] as? [[String: Any]]).compactMap {
            $0["id"] as? String
        }
        XCTAssertEqual(listed, [failing, ids[4]], "the newest two finished jobs")
        XCTAssertEqual(try service.get("/v1/jobs/\(ids[0])").status, 404)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: service.dir.file("cache/jobs"))) ?? []
        XCTAssertEqual(files, [ids[4]], "files of removed jobs are gone")
    }

    /// Probes hold a demuxer's index each (hundreds of MB for a long file), so only
    /// `maxConcurrentProbes` run at once; the next gets 503 with Retry-After, and a slot frees
    /// when a probe ends.
    func testProbesBeyondTheConcurrencyLimitAreToldToRetry() throws {
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/faststart.mp4")))
        let origin = try FaultServer()
        origin.route("/slow.mp4", .stall(afterBytes: 0, seconds: 2, then: .serve(body: media)))
        origin.route("/v.mp4", .serve(body: media))
        var limits = ServiceLimits()
        limits.maxConcurrentProbes = 1
        let service = try ServiceHarness(limits: limits)
        defer { service.stop() }
        let first = DispatchWorkItem {
            _ = try? HTTPClient.request("GET", service.url("/v1/probe", origin: origin.url("/slow.mp4")))
        }
        DispatchQueue.global().async(execute: first)
        // The first probe holds the slot once its request reaches the origin.
        XCTAssertTrue(
            waitUntil { origin.requests.contains { $0.path == "/slow.mp4" } }, "the first probe never fetched")
        let refused = try HTTPClient.request("GET", service.url("/v1/probe", origin: origin.url("/v.mp4")))
        XCTAssertEqual(refused.status, 503, refused.text)
        XCTAssertEqual(refused.headers["retry-after"], "1")
        first.wait()
        XCTAssertEqual(
            try HTTPClient.request("GET", service.url("/v1/probe", origin: origin.url("/v.mp4"))).status, 200)
    }

    func testCacheEndpoints() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        let origin = nginx.url("/faststart.mp4")
        XCTAssertEqual(try HTTPClient.request("GET", service.url("/v1/probe", origin: origin)).status, 200)
        let stats = try service.get("/v1/cache").json()
        XCTAssertEqual(stats["resources"] as? Int, 1)
        let ranges = try HTTPClient.request("GET", service.url("/v1/cache/ranges", origin: origin)).json()
        XCTAssertEqual(ranges["url"] as? String, origin)
        XCTAssertFalse((ranges["ranges"] as? [Any] ?? []).isEmpty)
        XCTAssertEqual((ranges["tracks"] as? [Any])?.count, 2)
        let removed = try HTTPClient.request("DELETE", service.url("/v1/cache", origin: origin)).json()
        XCTAssertEqual(removed["removed"] as? Bool, true)
        XCTAssertEqual(try service.get("/v1/cache").json()["resources"] as? Int, 0)
    }

    func testMetricsPassPromtool() throws {
        let service = try ServiceHarness()
        defer { service.stop() }
        _ = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: nginx.url("/faststart.mp4")), headers: ["Range": "bytes=0-999"])
        _ = try service.get("/v1/nothing")
        let id = try XCTUnwrap(
            try service.postJob(#"{"type": "prefetch", "url": "\#(nginx.url("/faststart.mp4"))", "seconds": 1}"#)
                .json()["id"] as? String)
        _ = try service.waitForJob(id)
        let page = try service.get("/metrics")
        XCTAssertEqual(page.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        let samples = try PrometheusText.checkedSamples(page.text)
        XCTAssertEqual(samples["mprobe_http_requests_total{route=\"/v1/stream\",status=\"206\"}"], 1)
        XCTAssertEqual(samples["mprobe_http_requests_total{route=\"other\",status=\"404\"}"], 1)
        XCTAssertEqual(samples["mprobe_proxy_bytes_total"], 1000)
        XCTAssertGreaterThan(samples["mprobe_origin_bytes_total"] ?? 0, 0)
        XCTAssertEqual(samples["mprobe_jobs{state=\"done\"}"], 1)
        XCTAssertEqual(samples["mprobe_job_duration_seconds_count"], 1)
        XCTAssertEqual(samples["mprobe_cache_resources"], 1)
        XCTAssertNotNil(samples["mprobe_cache_hit_ratio"])
        XCTAssertNotNil(samples["mprobe_origin_connections"])
    }
}

/// An ISO 8601 time with fractional seconds, as the API writes them.
func isoDate(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}
