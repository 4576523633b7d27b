import Foundation
import Serving
import TestSupport
import XCTest

/// The dashboard at `GET /`, in a real browser (Debian's headless Chromium over the DevTools
/// protocol) against a real service and nginx on loopback: the token asked once, a prefetch
/// submitted through the page's form and drawn on its byte map, a storyboard that shows the tile
/// under the pointer, a `<video>` playing through the proxy, the probe card and the health numbers.
/// Screenshots of every view, at desktop and phone widths, go to `artifacts`.
final class DashboardTests: XCTestCase {
    var nginx: NginxServer!
    let token = "dash-t0ken"
    var auth: [String: String] { ["Authorization": "Bearer \(token)"] }

    /// Where screenshots are kept after the run: `$MPROBE_TEST_ARTIFACTS/dashboard`, else
    /// `.build/test-artifacts/dashboard` in the package.
    static let artifacts: String = {
        if let folder = ProcessInfo.processInfo.environment["MPROBE_TEST_ARTIFACTS"], !folder.isEmpty {
            return folder + "/dashboard"
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts/dashboard").path
    }()

    override func setUpWithError() throws {
        nginx = try NginxServer(root: samplesDirectory)
    }

    override func tearDown() {
        nginx.stop()
    }

    // MARK: Without a browser

    func testThePageIsServedWithoutTheTokenUnderAStrictPolicy() throws {
        let service = try ServiceHarness(token: token)
        defer { service.stop() }
        let expected = [
            "/": "text/html; charset=utf-8", "/dashboard/app.js": "text/javascript; charset=utf-8",
            "/dashboard/app.css": "text/css; charset=utf-8", "/dashboard/icon.svg": "image/svg+xml",
        ]
        for (path, type) in expected {
            let reply = try service.get(path)
            XCTAssertEqual(reply.status, 200, path)
            XCTAssertEqual(reply.headers["content-type"], type, path)
            XCTAssertEqual(reply.headers["cache-control"], "no-cache", path)
            XCTAssertEqual(reply.headers["referrer-policy"], "no-referrer", path)
            let policy = try XCTUnwrap(reply.headers["content-security-policy"], path)
            XCTAssertTrue(policy.hasPrefix("default-src 'none'; script-src 'self';"), policy)
            XCTAssertFalse(
                policy.contains("http") || policy.contains("unsafe") || policy.contains("*"), "self only: \(policy)")
        }
        let page = try service.get("/").text
        XCTAssertFalse(page.contains("<script>") || page.contains("style="), "no inline script or style")
        XCTAssertNil(
            page.range(of: #"(src|href|action)="(https?:)?//"#, options: .regularExpression),
            "the page loads nothing from elsewhere")
        for asset in ["/dashboard/app.js", "/dashboard/app.css"] {
            let text = try service.get(asset).text
            XCTAssertFalse(
                text.contains("http://") || text.contains("https://") || text.contains("@import"),
                "\(asset) names no other origin")
        }
        XCTAssertEqual(try HTTPClient.request("HEAD", service.url("/")).status, 200)
        XCTAssertEqual(try HTTPClient.request("POST", service.url("/")).status, 405)
        XCTAssertEqual(try service.get("/dashboard/missing.js").status, 404, "no other file is there")
        XCTAssertEqual(try service.get("/v1/health").status, 401, "the data the page shows needs the token")
    }

    func testHealthShowsTheCountersOfMetrics() throws {
        let service = try ServiceHarness(token: token)
        defer { service.stop() }
        let origin = nginx.url("/faststart.mp4")
        _ = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: origin, extra: "&token=\(token)"),
            headers: ["Range": "bytes=0-9999"])
        _ = try HTTPClient.request(
            "GET", service.url("/v1/stream", origin: origin, extra: "&token=\(token)"),
            headers: ["Range": "bytes=0-9999"])
        let health = try service.get("/v1/health", headers: auth).json()
        let metrics = try PrometheusText.checkedSamples(try service.get("/metrics", headers: auth).text)
        let cache = try XCTUnwrap(health["cache"] as? [String: Any])
        XCTAssertEqual(Double(health["origin_bytes"] as? Int ?? -1), metrics["mprobe_origin_bytes_total"])
        XCTAssertEqual(health["proxy_bytes"] as? Int, 20_000)
        XCTAssertEqual(Double(health["proxy_bytes"] as? Int ?? -1), metrics["mprobe_proxy_bytes_total"])
        XCTAssertEqual(Double(cache["bytes"] as? Int ?? -1), metrics["mprobe_cache_bytes"])
        XCTAssertEqual(Double(cache["max_bytes"] as? Int ?? -1), metrics["mprobe_cache_max_bytes"])
        XCTAssertEqual(cache["hit_ratio"] as? Double, metrics["mprobe_cache_hit_ratio"])
        XCTAssertGreaterThan(cache["hit_ratio"] as? Double ?? 0, 0, "the second read came from the cache")
        XCTAssertEqual(
            Double((health["jobs"] as? [String: Int])?["done"] ?? -1), metrics["mprobe_jobs{state=\"done\"}"])
        let resources = try HTTPClient.request("GET", service.url("/v1/cache/resources"), headers: auth)
        let list = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(resources.body)) as? [[String: Any]])
        XCTAssertEqual(list.map { $0["url"] as? String }, [origin], "the same list as mprobe cache ls --json")
    }

    // MARK: In the browser

    func testAPrefetchSubmittedInThePageShowsItsShareOnTheByteMap() throws {
        let service = try ServiceHarness(token: token)
        defer { service.stop() }
        let (browser, page) = try openDashboard(service)
        defer { browser.close() }
        let origin = nginx.url("/moov-at-end.mp4")

        let job = try submitJob(
            on: page, type: "prefetch", url: origin, fields: ["job-start": "0", "job-seconds": "2"])
        XCTAssertEqual(job.state, "done")
        try page.screenshot(to: DashboardTests.artifacts + "/jobs-desktop.png")

        // The byte map: the share cached is what the API says is cached, the moov is marked, the
        // last job's ranges are highlighted, each track has its buffered time.
        try show(page, "cache")
        let card = "#cache-list li[data-url=\(try BrowserPage.quote(origin))]"
        let shown = try page.wait(
            for: "document.querySelector(\(try BrowserPage.quote(card + " .bytemap")))?.dataset.cachedPercent")
        let ranges = try service.get("/v1/cache/ranges?url=" + encoded(origin), headers: auth).json()
        let cachedRanges = try XCTUnwrap(ranges["ranges"] as? [[String: Int]])
        let size = try XCTUnwrap(ranges["size"] as? Int)
        let cached = cachedRanges.reduce(0) { $0 + $1["end"]! - $1["start"]! }
        // (The default plan is for VLC too, whose first 4 MiB hold this small file whole.)
        XCTAssertGreaterThan(cached, 0)
        XCTAssertLessThanOrEqual(cached, size)
        XCTAssertEqual(
            shown as? String, String(format: "%.1f%%", Double(cached * 1000 / size) / 10), "the share of bytes cached")
        let segments =
            try page.evaluate(
                """
                [...document.querySelectorAll(\(try BrowserPage.quote(card + " .bytemap .segment")))].map(s => s.className)
                """) as? [String] ?? []
        let result = try XCTUnwrap(
            ((try service.get("/v1/jobs/\(job.id)", headers: auth).json()["result"] as? [String: Any])?["items"]
                as? [[String: Any]])?.first?["prefetch"] as? [String: Any])
        let jobRanges =
            (result["header_ranges"] as? [Any] ?? []).count + (result["sample_ranges"] as? [Any] ?? []).count
        XCTAssertEqual(segments.filter { $0 == "segment cached" }.count, cachedRanges.count)
        XCTAssertEqual(segments.filter { $0 == "segment job" }.count, jobRanges, "the last prefetch's ranges")
        XCTAssertEqual(segments.filter { $0 == "segment moov" }.count, 1)
        let moovLeft =
            try page.evaluate(
                "parseFloat(document.querySelector(\(try BrowserPage.quote(card + " .segment.moov"))).style.left)")
            as? Double
        XCTAssertEqual(moovLeft ?? 0, 100 * 153_391 / 158_106, accuracy: 0.01, "the moov sits at the end")
        let buffered =
            try page.evaluate(
                """
                [...document.querySelectorAll(\(try BrowserPage.quote(card + " .timemap")))].map(m => Number(m.dataset.bufferedSeconds))
                """) as? [Double] ?? []
        let tracks = try XCTUnwrap(ranges["tracks"] as? [[String: Any]])
        XCTAssertEqual(buffered.count, 2)
        for (shownSeconds, track) in zip(buffered, tracks) {
            let seconds = (track["buffered"] as? [[String: Double]] ?? []).reduce(0) { $0 + $1["end"]! - $1["start"]! }
            XCTAssertEqual(shownSeconds, seconds, accuracy: 0.001)
            XCTAssertGreaterThanOrEqual(shownSeconds, 1.8, "the two seconds asked for")
        }
        try page.screenshot(to: DashboardTests.artifacts + "/cache-desktop.png")
        try atPhoneWidth(page, "cache")
        try show(page, "jobs")
        try atPhoneWidth(page, "jobs")

        // Probe, through the same form: a readable card.
        let probe = try submitProbe(on: page, url: origin)
        XCTAssertTrue(probe.contains("at the end: players need a second request (bytes 153391 to 158105"), probe)
        XCTAssertTrue(probe.contains("Fragmented\nno"), probe)
        XCTAssertTrue(probe.contains("#0 video (default) h264 (High) · 320×180 · 25 fps"), probe)
        XCTAssertTrue(probe.contains("#1 audio (default) aac (LC) · 44100 Hz · 2 ch (stereo) · eng"), probe)
        XCTAssertTrue(probe.contains("Fetch cost\n0 requests"), "the probe read the cached header: \(probe)")
        try page.screenshot(to: DashboardTests.artifacts + "/probe-desktop.png")
        try atPhoneWidth(page, "probe")

        // Health: the numbers of /metrics.
        try show(page, "health")
        let originBytes = try page.wait(for: "document.getElementById('health-origin-text').dataset.bytes")
        let metrics = try PrometheusText.checkedSamples(try service.get("/metrics", headers: auth).text)
        XCTAssertEqual(Double(originBytes as? String ?? ""), metrics["mprobe_origin_bytes_total"])
        let cacheText = try page.evaluate("document.getElementById('health-cache-text').textContent") as? String ?? ""
        XCTAssertTrue(cacheText.hasSuffix("of 10.0 GiB (0.1%) in 1 resource"), cacheText)
        try page.screenshot(to: DashboardTests.artifacts + "/health-desktop.png")
        try atPhoneWidth(page, "health")

        // Remove the resource from its card.
        try show(page, "cache")
        try page.click(card + " button.danger")
        try page.wait(
            for:
                "!document.querySelector(\(try BrowserPage.quote(card))) && !document.getElementById('cache-empty').hidden"
        )
        XCTAssertEqual(try service.get("/v1/cache/resources", headers: auth).text, "[]\n")

        try assertWellBehaved(page, service: service)
    }

    func testJobsShowTheirStateLiveTheirErrorsAndCanBeCancelled() throws {
        let slow = try FaultServer()
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplesDirectory + "/moov-at-end.mp4")))
        slow.route("/slow.mp4", .stall(afterBytes: 1000, seconds: 30, then: .serve(body: media)))
        let service = try ServiceHarness(token: token)
        defer { service.stop() }
        let (browser, page) = try openDashboard(service)
        defer { browser.close() }

        let failed = try submitJob(on: page, type: "prefetch", url: nginx.url("/missing.mp4"))
        XCTAssertEqual(failed.state, "failed")
        let error =
            try page.evaluate(
                "document.querySelector(\"#job-list li[data-id='\(failed.id)'] .outcome .error\").textContent")
            as? String
        XCTAssertTrue(
            error?.hasPrefix("origin_error: ") == true && error?.contains("HTTP 404") == true, error ?? "no error shown"
        )

        // A job that hangs on its origin shows as running, with a Cancel button that ends it.
        try fillJobForm(on: page, type: "prefetch", url: slow.url("/slow.mp4"))
        try page.click("#job-submit")
        let running = "document.querySelector('#job-list li.job[data-state=\"running\"]')"
        let id = try XCTUnwrap(try page.wait(for: "\(running)?.dataset.id") as? String)
        XCTAssertEqual(
            try page.evaluate("\(running).querySelector('.state').getAttribute('aria-live')") as? String, "polite",
            "state changes are announced")
        try page.screenshot(to: DashboardTests.artifacts + "/jobs-running.png")
        try page.click("#job-list li[data-id='\(id)'] .actions button")
        try page.wait(
            for: "document.querySelector(\"#job-list li[data-id='\(id)']\").dataset.state === 'cancelled'", timeout: 10)
        XCTAssertEqual(try service.get("/v1/jobs/\(id)", headers: auth).json()["state"] as? String, "cancelled")
        try assertWellBehaved(page, service: service)
    }

    func testTheStoryboardShowsTheTileUnderThePointerAndTheVideoPlaysThroughTheProxy() throws {
        let service = try ServiceHarness(token: token)
        defer { service.stop() }
        let (browser, page) = try openDashboard(service)
        defer { browser.close() }
        let origin = nginx.url("/faststart.mp4")

        let job = try submitJob(
            on: page, type: "thumbnails", url: origin, fields: ["job-count": "8", "job-width": "160"])
        XCTAssertEqual(job.state, "done")
        try page.click("#job-list li[data-id='\(job.id)'] a[href^='#thumbnails/']")
        try page.wait(for: "document.querySelectorAll('#tiles .tile-button').length === 8")

        // Showing the storyboard (an address any page can send the browser to) loads no media:
        // only playing does.
        XCTAssertFalse(page.requestedURLs.contains { $0.contains("/v1/stream") }, "\(page.requestedURLs)")

        // The cues as a player reads them from the job's WebVTT.
        let vtt = try service.get("/v1/jobs/\(job.id)/files/1/thumbs.vtt", headers: auth).text
        let cues = DashboardTests.cues(vtt)
        XCTAssertEqual(cues.count, 8)
        let duration = try XCTUnwrap(cues.last?.end)

        // Point at 2.3 s on the timeline: the tile shown is the cue's part of the sprite.
        let time = 2.3
        let expected = try XCTUnwrap(cues.lastIndex { $0.start <= time })
        let box = try XCTUnwrap(
            try page.evaluate(
                """
                (() => { const t = document.getElementById('timeline'); t.scrollIntoView({block: 'center'});
                         const r = t.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()
                """) as? [Double])
        try page.moveMouse(x: box[0] + box[2] * time / duration, y: box[1] + box[3] / 2)
        let index = try page.wait(
            for: "!document.getElementById('preview').hidden && document.getElementById('preview').dataset.index")
        XCTAssertEqual(Int(index as? String ?? ""), expected, "the cue under the pointer")
        let tile = try XCTUnwrap(
            try page.evaluate(
                """
                (() => { const t = document.getElementById('preview-tile'); const s = getComputedStyle(t);
                         return [t.dataset.xywh, s.backgroundPosition, s.width, s.height, s.backgroundImage]; })()
                """) as? [String])
        let (x, y, w, h) = cues[expected].xywh
        XCTAssertEqual(Array(tile[0...3]), ["\(x),\(y),\(w),\(h)", "\(-x)px \(-y)px", "\(w)px", "\(h)px"])
        XCTAssertTrue(tile[4].contains(cues[expected].image), "\(tile[4]) shows \(cues[expected].image)")
        let spriteWidth =
            try page.evaluate(
                """
                new Promise(done => { const i = new Image(); i.onload = () => done(i.naturalWidth); i.onerror = () => done(0);
                                      i.src = document.getElementById('preview-tile').style.backgroundImage.slice(5, -2); })
                """) as? Int ?? 0
        XCTAssertGreaterThanOrEqual(
            spriteWidth, x + w, "the sprite loads (with the token in its URL) and holds the tile")
        try page.screenshot(to: DashboardTests.artifacts + "/thumbnails-desktop.png")

        // The keyboard: the timeline takes focus, arrows move between tiles, Enter plays from there.
        try page.evaluate("document.getElementById('timeline').focus()")
        try page.press("ArrowRight")
        let next = min(expected + 1, cues.count - 1)
        XCTAssertEqual(
            Int(try page.wait(for: "document.getElementById('preview').dataset.index") as? String ?? ""), next)
        try page.press("Enter")
        try page.wait(for: "Math.abs(document.getElementById('player').currentTime - \(cues[next].start)) < 0.6")

        // The <video> plays the URL through /v1/stream from the start, past 2 s.
        try page.evaluate(
            "(async () => { const v = document.getElementById('player'); v.currentTime = 0; await v.play(); })()")
        try page.wait(for: "document.getElementById('player').currentTime > 2", timeout: 30)
        XCTAssertEqual(try page.evaluate("document.getElementById('player').error === null") as? Bool, true)
        XCTAssertTrue(
            service.log.contains { $0.hasPrefix("GET /v1/stream?url=") && $0.contains(" 206 ") },
            service.log.joined(separator: "\n"))

        // Clicking a tile seeks there.
        try page.click("#tiles .tile-button[data-index='1']")
        try page.wait(
            for: """
                (() => { const t = document.getElementById('player').currentTime; return t >= \(cues[1].start - 0.05) && t < \(cues[1].start + 1); })()
                """)
        // Paused, the tile of the time shown is marked as the current one.
        let paused = try XCTUnwrap(
            try page.evaluate(
                "(() => { const v = document.getElementById('player'); v.pause(); return v.currentTime; })()")
                as? Double)
        let current = try XCTUnwrap(cues.lastIndex { $0.start <= paused })
        try page.wait(
            for: "document.querySelector('#tiles .tile-button[aria-current]')?.dataset.index === '\(current)'")
        try atPhoneWidth(page, "thumbnails")

        try assertWellBehaved(page, service: service)
    }

    // MARK: Helpers

    /// A browser on the dashboard: it asks for the token, which is typed into its form once.
    func openDashboard(_ service: ServiceHarness) throws -> (Browser, BrowserPage) {
        let browser = try Browser()
        let page = try browser.newPage(width: 1280, height: 900)
        try page.navigate(service.base + "/")
        try page.wait(for: "!document.getElementById('login').hidden && document.activeElement.id === 'token'")
        XCTAssertEqual(try page.evaluate("document.getElementById('nav').hidden") as? Bool, true)
        try page.screenshot(to: DashboardTests.artifacts + "/token.png")
        try page.type(token, into: "#token")
        try page.click("#login-form button[type='submit']")
        try page.wait(for: "!document.getElementById('nav').hidden && !document.getElementById('view-cache').hidden")
        XCTAssertEqual(
            try page.evaluate("sessionStorage.getItem('mprobe.token')") as? String, token, "kept for the session")
        let unlabelled =
            try page.evaluate(
                """
                [...document.querySelectorAll('input, select, button, [role=slider]')]
                  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby')
                               && !e.textContent.trim()).map(e => e.id || e.outerHTML)
                """) as? [String]
        XCTAssertEqual(unlabelled, [], "every control has a name")
        return (browser, page)
    }

    /// Goes to a view through the navigation, as a person would, and waits for it to show.
    func show(_ page: BrowserPage, _ view: String) throws {
        try page.click("#nav a[href='#\(view)']")
        try page.wait(for: "!document.getElementById('view-\(view)').hidden")
    }

    /// Fills the Jobs form as a person would: the URL typed, the job chosen, its options set.
    func fillJobForm(on page: BrowserPage, type: String, url: String, fields: [String: String] = [:]) throws {
        try show(page, "jobs")
        try page.evaluate("document.getElementById('job-url').value = ''")
        try page.type(url, into: "#job-url")
        try page.evaluate(
            "(() => { const s = document.getElementById('job-type'); s.value = '\(type)'; s.dispatchEvent(new Event('change')); })()"
        )
        for (id, value) in fields {
            try page.evaluate("document.getElementById('\(id)').value = \(try BrowserPage.quote(value))")
        }
    }

    /// Submits a job through the form and waits in the page until it has finished there;
    /// returns its id and final state.
    func submitJob(
        on page: BrowserPage, type: String, url: String, fields: [String: String] = [:]
    ) throws -> (id: String, state: String) {
        try fillJobForm(on: page, type: type, url: url, fields: fields)
        try page.evaluate("document.getElementById('status').textContent = ''")
        try page.click("#job-submit")
        // The page says which job it queued; that job's card is then followed until it ends.
        let id = try XCTUnwrap(
            try page.wait(for: "document.getElementById('status').textContent.match(/queued: (\\S+)/)?.[1]") as? String)
        let card = "document.querySelector(\"#job-list li[data-id='\(id)']\")"
        let state = try page.wait(
            for: "['done', 'failed', 'cancelled'].includes(\(card)?.dataset.state) && \(card).dataset.state",
            timeout: 60)
        return (id, state as? String ?? "")
    }

    /// Probes `url` through the Jobs form; returns the probe card's text, terms and values on lines of their own.
    func submitProbe(on page: BrowserPage, url: String) throws -> String {
        try fillJobForm(on: page, type: "probe", url: url)
        try page.click("#job-submit")
        try page.wait(
            for: "!document.getElementById('view-probe').hidden && !document.getElementById('probe-card').hidden")
        return try page.evaluate("document.getElementById('probe-card').innerText") as? String ?? ""
    }

    /// The current view at 360 px: nothing wider than the screen; a screenshot; back to the desktop.
    func atPhoneWidth(_ page: BrowserPage, _ view: String) throws {
        try page.setViewport(width: 360, height: 740)
        let width = try page.evaluate("document.documentElement.scrollWidth") as? Int ?? 0
        XCTAssertLessThanOrEqual(width, 360, "\(view) fits a 360 px screen")
        try page.screenshot(to: DashboardTests.artifacts + "/\(view)-360.png")
        try page.setViewport(width: 1280, height: 900)
    }

    /// No exception, console error or policy violation in the page, and no request anywhere but
    /// the service.
    func assertWellBehaved(_ page: BrowserPage, service: ServiceHarness) throws {
        XCTAssertEqual(page.problems, [])
        // data: URLs are the browser's own (the icons of its video controls).
        let elsewhere = page.requestedURLs.filter {
            !$0.hasPrefix(service.base + "/") && $0 != "about:blank" && !$0.hasPrefix("data:")
        }
        XCTAssertEqual(elsewhere, [], "no external requests")
        XCTAssertFalse(service.log.joined(separator: "\n").contains(token), "the token is never logged")
    }

    func encoded(_ url: String) -> String { url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url }

    struct Cue {
        let start: Double
        let end: Double
        let image: String
        let xywh: (Int, Int, Int, Int)
    }

    /// Cues of a WebVTT storyboard: `HH:MM:SS.mmm --> HH:MM:SS.mmm`, then `sprite.jpg#xywh=x,y,w,h`.
    static func cues(_ vtt: String) -> [Cue] {
        func seconds(_ clock: Substring) -> Double {
            clock.split(separator: ":").reduce(0) { $0 * 60 + (Double($1) ?? 0) }
        }
        let lines = vtt.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.indices.dropLast().compactMap { i in
            let parts = lines[i].split(separator: " ")
            guard parts.count == 3, parts[1] == "-->" else { return nil }
            let reference = lines[i + 1].split(separator: "#")
            let numbers = reference.last?.dropFirst("xywh=".count).split(separator: ",").compactMap { Int($0) } ?? []
            guard reference.count == 2, numbers.count == 4 else { return nil }
            return Cue(
                start: seconds(parts[0]), end: seconds(parts[2]), image: String(reference[0]),
                xywh: (numbers[0], numbers[1], numbers[2], numbers[3]))
        }
    }
}
