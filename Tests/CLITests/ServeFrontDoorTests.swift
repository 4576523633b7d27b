import Foundation
import TestSupport
import XCTest

/// `mprobe serve`'s front door, attacked as a web page in the user's browser would: real
/// Chromium, a page on another loopback port, a name rebound onto the service, and curl sending
/// what browsers send. The media origin is always allowed (`--allow-host`), so that every
/// refusal seen here is the front door's, not the origin guard's.
final class ServeFrontDoorTests: CLITestCase {
    private var media: FaultServer!
    private var mediaURL: String { media.url("/v.mp4") }

    override func setUpWithError() throws {
        try super.setUpWithError()
        media = try FaultServer()
        media.route(
            "/v.mp4", .serve(body: Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))))
    }

    override func tearDown() {
        media = nil
        super.tearDown()
    }

    private func serve(_ args: [String] = [], listen: String? = nil) throws -> ServeCommandTests.Server {
        try ServeCommandTests.Server(
            ["--cache-dir", cacheDir, "--allow-host", "127.0.0.1:\(media.port)"] + args,
            log: dir.file("serve-\(UUID().uuidString).log"), listen: listen)
    }

    private func jobs(_ server: ServeCommandTests.Server) throws -> [[String: Any]] {
        try XCTUnwrap(try HTTPClient.request("GET", server.base + "/v1/jobs").json()["jobs"] as? [[String: Any]])
    }

    /// The access log's lines for `path` (method and status), as the service wrote them.
    private func logged(_ server: ServeCommandTests.Server, _ path: String) throws -> [(method: String, status: Int)] {
        try String(contentsOfFile: server.log, encoding: .utf8).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count > 2, parts[1].hasPrefix(path), let status = Int(parts[2]) else { return nil }
            return (String(parts[0]), status)
        }
    }

    /// Every way a page can send a request, from a page on another loopback port (same site,
    /// other origin): forms (text/plain and urlencoded), `fetch` in no-cors and cors modes,
    /// `sendBeacon`, and `<img>`, `<script>`, `<video>` at the GET endpoints that fetch origins.
    /// The browser sends them all, the service refuses them all, no job exists afterwards and
    /// the origin never heard of the media URL.
    func testPagesOfOtherOriginsCannotMakeTheServiceAct() throws {
        let server = try serve()
        defer { server.stop() }
        let attacker = try FaultServer()
        attacker.route(
            "/attack.html",
            .serve(body: Array(try attackPage(service: server.base, media: mediaURL).utf8), contentType: "text/html"))
        let browser = try Browser()
        defer { browser.close() }
        let page = try browser.newPage()
        try page.navigate(attacker.url("/attack.html"))
        try page.wait(for: "window.attacked === true", timeout: 60)
        // Every attempt reached the service (else this test would prove nothing) and was refused.
        // The log is written in batches (every 0.1 s): wait for the lines.
        _ = waitUntil(seconds: 10) {
            let lines = (try? self.logged(server, "/v1")) ?? []
            return lines.filter { $0.method == "POST" }.count >= 5 && lines.count >= 11
        }
        let posts = try logged(server, "/v1/jobs")
        XCTAssertGreaterThanOrEqual(posts.filter { $0.method == "POST" }.count, 5, "\(posts)")
        XCTAssertTrue(posts.allSatisfy { $0.status == 403 }, "\(posts)")
        for path in ["/v1/probe", "/v1/stream"] {
            let gets = try logged(server, path)
            XCTAssertGreaterThanOrEqual(gets.count, 3, "img, script and video reached \(path): \(gets)")
            XCTAssertTrue(gets.allSatisfy { $0.status == 403 }, "\(path): \(gets)")
        }
        // A navigation the user began (Sec-Fetch-Site: none) that the page redirects to the service,
        // as it can again and again with history.back(): it may read, not make the service fetch.
        attacker.route(
            "/hop-probe",
            .redirect(
                to: server.base + "/v1/probe?url="
                    + (mediaURL.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")))
        attacker.route("/hop-stream", .redirect(to: server.stream(mediaURL)))
        attacker.route("/hop-jobs", .redirect(to: server.base + "/v1/jobs"))
        let before = try logged(server, "/v1").count
        for hop in ["/hop-probe", "/hop-stream", "/hop-jobs"] { try page.navigate(attacker.url(hop)) }
        XCTAssertTrue(waitUntil(seconds: 10) { ((try? self.logged(server, "/v1").count) ?? 0) >= before + 3 })
        XCTAssertTrue(try logged(server, "/v1/probe").suffix(1).allSatisfy { $0.status == 403 })
        XCTAssertTrue(try logged(server, "/v1/stream").suffix(1).allSatisfy { $0.status == 403 })
        XCTAssertEqual(try logged(server, "/v1/jobs").last?.status, 200, "reading the jobs is no effect")
        XCTAssertEqual(try jobs(server).count, 0, "no job exists")
        XCTAssertTrue(media.requests.isEmpty, "the service fetched nothing for the page: \(media.requests.map(\.path))")
        // The same requests from a program (no browser markers) and from the service's own page still work.
        let made = try HTTPClient.request(
            "POST", server.base + "/v1/jobs", body: Array(#"{"type":"prefetch","url":"\#(mediaURL)","seconds":1}"#.utf8)
        )
        XCTAssertEqual(made.status, 202, made.text)
        let own = try browser.newPage()
        try own.navigate(server.base + "/")
        let status =
            try own.evaluate(
                """
                fetch('/v1/jobs', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                   body: JSON.stringify({type: 'prefetch', url: \(try BrowserPage.quote(mediaURL)), seconds: 1})}).then(r => r.status)
                """) as? Int
        XCTAssertEqual(status, 202, "the dashboard's own origin may")
    }

    /// The hostile page: every kind of request at once, then `attacked` once each has been sent
    /// (element loads end with an error: the service refuses them).
    private func attackPage(service: String, media: String) throws -> String {
        let job = #"{"type":"prefetch","url":"\#(media)","seconds":2}"#
        let quotedJob = job.replacingOccurrences(of: "\"", with: "&quot;")
        return """
            <!doctype html><html><body>
            <form id="plain" method="post" enctype="text/plain" action="\(service)/v1/jobs" target="sink1">
              <input name="\(quotedJob.dropLast())" value="}"></form>
            <form id="encoded" method="post" action="\(service)/v1/jobs" target="sink2">
              <input name="type" value="prefetch"><input name="url" value="\(media)"></form>
            <iframe name="sink1"></iframe><iframe name="sink2"></iframe>
            <script>
            const service = \(try BrowserPage.quote(service));
            const media = \(try BrowserPage.quote(media));
            const job = JSON.stringify({type: 'prefetch', url: media, seconds: 2});
            const settle = (element) => new Promise(done => {
              element.onload = element.onerror = element.onloadeddata = () => done();
              setTimeout(done, 5000);
            });
            async function attack() {
              document.getElementById('plain').submit();
              document.getElementById('encoded').submit();
              navigator.sendBeacon(service + '/v1/jobs', new Blob([job], {type: 'text/plain'}));
              navigator.sendBeacon(service + '/v1/jobs', job);
              for (const init of [{mode: 'no-cors', headers: {'Content-Type': 'text/plain'}}, {mode: 'no-cors'},
                                  {headers: {'Content-Type': 'application/json'}}]) {
                try { await fetch(service + '/v1/jobs', Object.assign({method: 'POST', body: job}, init)); } catch (e) {}
              }
              try { await fetch(service + '/v1/jobs', {method: 'POST', mode: 'no-cors', body: new URLSearchParams({type: 'prefetch', url: media})}); } catch (e) {}
              const loads = [];
              for (const path of ['/v1/probe?url=', '/v1/stream?url=']) {
                const target = service + path + encodeURIComponent(media);
                const image = new Image(); image.src = target + '&as=img'; loads.push(settle(image));
                const script = document.createElement('script'); script.src = target + '&as=script';
                document.body.appendChild(script); loads.push(settle(script));
                const video = document.createElement('video'); video.muted = true; video.src = target + '&as=video';
                document.body.appendChild(video); loads.push(settle(video)); video.play().catch(() => {});
              }
              await Promise.all(loads);
              await new Promise(done => setTimeout(done, 1500)); // the forms' navigations
              window.attacked = true;
            }
            attack();
            </script></body></html>
            """
    }

    /// What a browser sends, sent with curl: a state-changing request must be JSON and come from
    /// no browser at all or from the service's own origin.
    func testStateChangingRequestsMustBeJSONFromTheServicesOwnOrigin() throws {
        let server = try serve()
        defer { server.stop() }
        let job = Array(#"{"type":"prefetch","url":"\#(mediaURL)","seconds":1}"#.utf8)
        let own = server.base
        let cases: [([String: String], Int, String)] = [
            (["Content-Type": "text/plain", "Origin": "http://evil.example"], 403, "cross_origin"),
            (["Origin": "http://evil.example"], 403, "cross_origin"),
            (["Origin": "null"], 403, "cross_origin"),
            (["Sec-Fetch-Site": "cross-site"], 403, "cross_origin"),
            (["Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"], 403, "cross_origin"),
            (["Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"], 403, "cross_origin"),
            (["Content-Type": "text/plain"], 415, "unsupported_media_type"),
            (["Content-Type": "application/x-www-form-urlencoded"], 415, "unsupported_media_type"),
            (["Content-Type": "application/json,text/plain"], 415, "unsupported_media_type"),
            (
                ["Content-Type": "application/json; charset=utf-8", "Origin": own, "Sec-Fetch-Site": "same-origin"],
                202, ""
            ),
            (["Origin": own.replacingOccurrences(of: "127.0.0.1", with: "localhost")], 403, "cross_origin"),
            ([:], 202, ""),
        ]
        for (headers, status, code) in cases {
            let reply = try HTTPClient.request("POST", own + "/v1/jobs", headers: headers, body: job)
            XCTAssertEqual(reply.status, status, "\(headers): \(reply.text)")
            if !code.isEmpty {
                XCTAssertEqual((try reply.json()["error"] as? [String: Any])?["code"] as? String, code, "\(headers)")
            }
        }
        XCTAssertEqual(try jobs(server).count, 2, "only the two accepted jobs exist")
        let id = try XCTUnwrap(try jobs(server).first?["id"] as? String)
        let delete = try HTTPClient.request(
            "DELETE", own + "/v1/jobs/\(id)", headers: ["Origin": "http://evil.example"])
        XCTAssertEqual(delete.status, 403, delete.text)
        let clear = try HTTPClient.request("DELETE", own + "/v1/cache?url=x", headers: ["Sec-Fetch-Site": "same-site"])
        XCTAssertEqual(clear.status, 403, clear.text)
        // Reading from another origin's page: refused too (the page cannot read it, but it acts);
        // a browser that sends no Sec-Fetch-Site names the page in its Referer, and a navigation
        // the browser began by itself reads but does not fetch.
        for headers in [
            ["Sec-Fetch-Site": "cross-site"], ["Referer": "http://evil.example/page.html"],
            ["Sec-Fetch-Site": "none"], ["Origin": own + "?x"],
            ["Origin": "http://u@" + own.dropFirst("http://".count)],
        ] {
            let probe = try HTTPClient.request("GET", own + "/v1/probe?url=" + mediaURL, headers: headers)
            XCTAssertEqual(probe.status, 403, "\(headers): \(probe.text)")
        }
        XCTAssertEqual(try HTTPClient.request("GET", own + "/v1/jobs", headers: ["Sec-Fetch-Site": "none"]).status, 200)
        XCTAssertEqual(
            try HTTPClient.request("GET", own + "/v1/jobs", headers: ["Referer": own + "/"]).status, 200,
            "the dashboard's own page")
        // What holds no data and does nothing is for every page: liveness, the dashboard, the API's description.
        for path in ["/healthz", "/", "/openapi.json"] {
            XCTAssertEqual(
                try HTTPClient.request("GET", own + path, headers: ["Sec-Fetch-Site": "cross-site"]).status, 200, path)
        }
    }

    /// DNS rebinding: only the listen address, localhost and `--public-host` names are answered.
    func testOnlyTheServicesOwnNamesAreAnswered() throws {
        try mprobe(["serve", "--cache-dir", cacheDir, "--public-host", "media.example.com"], expect: 2)  // a name needs a token
        let server = try serve([
            "--token", "t", "--public-host", "media.example.com", "--public-host", "api.example.com:8443",
        ])
        defer { server.stop() }
        let port = server.port
        let auth = ["Authorization": "Bearer t"]
        let cases: [(String, Int)] = [
            ("evil.example", 421), ("evil.example:\(port)", 421), ("127.0.0.1:\(port)", 200),
            ("localhost:\(port)", 200),
            ("LOCALHOST:\(port)", 200), ("127.0.0.1", 200), ("127.0.0.1:\(port + 1)", 421), ("127.0.0.2:\(port)", 421),
            ("media.example.com", 200), ("media.example.com:443", 200), ("api.example.com:8443", 200),
            ("api.example.com", 421),
            ("sub.media.example.com", 421), ("media.example.com.evil.example", 421), ("127.0.0.1:\(port)@evil", 421),
            ("[::1]:\(port)", 421), ("a b", 421),
        ]
        for (host, status) in cases {
            let reply = try HTTPClient.request(
                "GET", server.base + "/v1/cache/resources", headers: ["Host": host].merging(auth) { $1 })
            XCTAssertEqual(reply.status, status, "Host: \(host): \(reply.text)")
            if status == 421 {
                XCTAssertEqual(
                    (try reply.json()["error"] as? [String: Any])?["code"] as? String, "misdirected_request", host)
            }
        }
        // The proxy too: a rebound page reading an allowed origin through the service.
        let proxied = try HTTPClient.request(
            "GET", server.stream(mediaURL, token: "t"), headers: ["Host": "evil.example:\(port)"])
        XCTAssertEqual(proxied.status, 421)
        XCTAssertTrue(media.requests.isEmpty)
    }

    /// A page of the attacker's name, whose name then points at 127.0.0.1 on the same port (the
    /// attacker's server gone, the service there): to the browser its requests are same-origin,
    /// and only the `Host` tells them apart. They read nothing.
    func testAPageRebindingItsNameOntoTheServiceReadsNothing() throws {
        let attacker = try FaultServer()
        let port = attacker.port
        attacker.route("/", .serve(body: Array("<!doctype html><title>hi</title>".utf8), contentType: "text/html"))
        let browser = try Browser(arguments: ["--host-resolver-rules=MAP rebind.example 127.0.0.1"])
        defer { browser.close() }
        let page = try browser.newPage()
        try page.navigate("http://rebind.example:\(port)/")
        attacker.stop()
        let server = try serve(listen: "127.0.0.1:\(port)")
        defer { server.stop() }
        _ = try HTTPClient.request("GET", server.stream(mediaURL), headers: ["Range": "bytes=0-99"])  // something to read
        let read =
            try page.evaluate(
                """
                Promise.all(['/v1/cache/resources', '/v1/stream?url=' + encodeURIComponent(\(try BrowserPage.quote(mediaURL))), '/v1/jobs']
                  .map(path => fetch(path).then(r => r.status + ' ' + r.headers.get('content-type')).catch(e => 'failed ' + e)))
                """) as? [String]
        XCTAssertEqual(read, Array(repeating: "421 application/json", count: 3))
    }

    /// An origin's Content-Type is read as one media type, and only a listed one is passed on, as
    /// parsed: a list (which a browser reads as its last member), control characters or a type
    /// without subtype is `application/octet-stream`.
    func testAnOriginsContentTypeIsParsedExactly() throws {
        let page = Array("<script>document.title='ran'</script>".utf8)
        let types: [(String, String)] = [
            ("video/mp4,text/html", "application/octet-stream"), ("video/mp4, text/html", "application/octet-stream"),
            ("text/html", "application/octet-stream"), ("image/svg+xml", "application/octet-stream"),
            ("VIDEO/MP4; codecs=\"avc1.42E01E, mp4a.40.2\"", "video/mp4"), ("audio/mpeg", "audio/mpeg"),
            ("video/\u{0B}mp4", "application/octet-stream"), ("video", "application/octet-stream"),
            ("video/", "application/octet-stream"), ("/mp4", "application/octet-stream"),
            ("video/mp4/x", "application/octet-stream"),
            ("audio/mp4;x=text/html", "audio/mp4"), ("video/mp4 ;", "video/mp4"),
            ("text/html;video/mp4", "application/octet-stream"), ("image/png", "image/png"),
            ("image/xml", "application/octet-stream"), ("video/x+xml", "application/octet-stream"),
            ("image/SVG+XML", "application/octet-stream"),
        ]
        for (n, (type, _)) in types.enumerated() {
            media.route("/t\(n)", .fixed(status: 200, headers: [("Content-Type", type)], body: page))
        }
        let server = try serve()
        defer { server.stop() }
        for (n, (type, expected)) in types.enumerated() {
            let reply = try HTTPClient.request("GET", server.stream(media.url("/t\(n)")))
            XCTAssertEqual(reply.headers["content-type"], expected, "origin sent \(type.debugDescription)")
            XCTAssertEqual(reply.body, page)
        }
    }

    /// `--allow-origin` lets a web player elsewhere play through the proxy (with CORS headers for
    /// players that fetch), and nothing more: the API still refuses that origin's pages.
    func testAPageOfAnAllowedOriginMayPlayThroughTheProxyAndNothingMore() throws {
        let app = "http://127.0.0.1:7"
        let server = try serve(["--allow-origin", app + "/"])
        defer { server.stop() }
        let played = try HTTPClient.request(
            "GET", server.stream(mediaURL),
            headers: [
                "Sec-Fetch-Site": "same-site", "Origin": app,
                "Range": "bytes=0-99",
            ])
        XCTAssertEqual(played.status, 206, played.text)
        XCTAssertEqual(played.headers["access-control-allow-origin"], app)
        XCTAssertTrue(played.headers["access-control-expose-headers"]?.contains("Content-Range") == true)
        let shouted = try HTTPClient.request(
            "GET", server.stream(mediaURL), headers: ["Origin": "HTTP://127.0.0.1:7", "Range": "bytes=0-9"])
        XCTAssertEqual(
            shouted.headers["access-control-allow-origin"], app,
            "the origin as browsers write it, not the header's text")
        let preflight = try HTTPClient.request(
            "OPTIONS", server.stream(mediaURL),
            headers: [
                "Origin": app, "Sec-Fetch-Site": "same-site",
                "Access-Control-Request-Headers": "authorization",
            ])
        XCTAssertEqual(preflight.status, 204)
        XCTAssertEqual(preflight.headers["access-control-allow-origin"], app)
        XCTAssertEqual(
            try HTTPClient.request("OPTIONS", server.stream(mediaURL), headers: ["Origin": "http://evil.example"])
                .status, 403)
        XCTAssertEqual(
            try HTTPClient.request("OPTIONS", server.base + "/v1/jobs", headers: ["Origin": app]).status, 403)
        let referred = try HTTPClient.request(
            "GET", server.stream(mediaURL),
            headers: [
                "Sec-Fetch-Site": "same-site",
                "Referer": app + "/player.html",
            ])
        XCTAssertEqual(referred.status, 200, "a <video> sends no Origin; its Referer names the page")
        for (method, path) in [("GET", "/v1/probe?url=" + mediaURL), ("POST", "/v1/jobs"), ("GET", "/v1/jobs")] {
            let reply = try HTTPClient.request(
                method, server.base + path, headers: ["Sec-Fetch-Site": "same-site", "Origin": app],
                body: method == "POST" ? Array("{}".utf8) : nil)
            XCTAssertEqual(reply.status, 403, "\(method) \(path)")
        }
        let other = try HTTPClient.request(
            "GET", server.stream(mediaURL), headers: ["Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"])
        XCTAssertEqual(other.status, 403)
        try mprobe(["serve", "--cache-dir", cacheDir, "--allow-origin", "https://app.example.com/path"], expect: 2)
    }
}
