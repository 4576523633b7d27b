import Foundation
import TestSupport
import XCTest

/// Several `mprobe serve` processes on one PostgreSQL behind the shipped nginx front
/// (deploy/nginx-front.conf), as an operator runs them: the built binary, a real PostgreSQL
/// started by the test, nginx as origin and as front.
final class ScaleOutTests: CLITestCase {
    static let token = "cluster-token"
    let auth = ["Authorization": "Bearer \(ScaleOutTests.token)"]

    /// PostgreSQL, three nodes sharing it (each with its own cache), and the front.
    final class Cluster {
        let postgres: PostgresServer
        let database: String
        let jobsURL: String
        var nodes: [ServeCommandTests.Server?] = []
        let front: NginxServer
        let frontPort: Int

        init(dir: TempDirectory, allow: [Int], lease: Int, nodes count: Int = 3) throws {
            postgres = try PostgresServer()
            jobsURL = try postgres.newDatabase()
            database = String(jobsURL.split(separator: "/").last!)
            for n in 0..<count {
                nodes.append(
                    try ServeCommandTests.Server(
                        [
                            "--cache-dir", dir.file("node\(n)"), "--jobs", jobsURL, "--job-lease", String(lease),
                            "--token", ScaleOutTests.token, "--public-host", "127.0.0.1",
                            "--max-connections-per-client", "0",
                        ] + allow.flatMap { ["--allow-host", "127.0.0.1:\($0)"] }, log: dir.file("node\(n).log")))
            }
            frontPort = try LoopbackSocket.freePort()
            let shipped = CLITestCase.samplesDirectory.replacingOccurrences(
                of: "/Samples", with: "/deploy/nginx-front.conf")
            var config = try String(contentsOfFile: shipped, encoding: .utf8)
            let ports = nodes.map { $0!.port }
            var lines = config.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let first = try XCTUnwrap(lines.firstIndex { $0.contains("# mprobe node") })
            lines.removeAll { $0.contains("# mprobe node") }
            lines.insert(
                contentsOf: ports.map { "    server 127.0.0.1:\($0) max_fails=1 fail_timeout=10s;" }, at: first)
            config = lines.joined(separator: "\n").replacingOccurrences(
                of: "listen 80;", with: "listen 127.0.0.1:\(frontPort);")
            front = try NginxServer(root: dir.path, http: config)
        }

        var frontBase: String { "http://127.0.0.1:\(frontPort)" }
        var live: [ServeCommandTests.Server] { nodes.compactMap { $0 } }

        /// The node whose process holds job `id` now, by the pid in its lease.
        func holder(of id: String) throws -> Int? {
            let holder = try postgres.sql("SELECT holder FROM mprobe_jobs WHERE id = '\(id)'", database: database)
            let parts = holder.split(separator: "|")
            guard parts.count == 4, let pid = Int32(parts[2]) else { return nil }
            return nodes.firstIndex { $0?.process.processIdentifier == pid }
        }

        func sql(_ statement: String) throws -> String { try postgres.sql(statement, database: database) }

        func stop() {
            for node in live { node.stop() }
            front.stop()
            postgres.stop()
        }
    }

    private func submit(_ base: String, _ body: String, query: String = "") throws -> HTTPReply {
        try HTTPClient.request("POST", base + "/v1/jobs" + query, headers: auth, body: Array(body.utf8))
    }

    private func encoded(_ url: String) -> String {
        url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url
    }

    /// 300 jobs submitted across the nodes all reach `done` with one result each, while the node
    /// running a stalled job is SIGKILLed (its job runs again elsewhere once its lease ends) and
    /// PostgreSQL restarts (the nodes reconnect; submissions meanwhile are refused, then taken).
    func testThreeHundredJobsAllFinishOnceThroughAKilledNodeAndAPostgresRestart() throws {
        let origin = try NginxServer(root: CLITestCase.samplesDirectory)
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        let slow = try FaultServer()
        slow.route(
            "/stalled.mp4",
            .sequence([.stall(afterBytes: 0, seconds: 60, then: .serve(body: media)), .serve(body: media)]))
        let cluster = try Cluster(dir: dir, allow: [origin.port, slow.port], lease: 2)
        defer { cluster.stop() }

        let stalled = try submit(cluster.live[0].base, #"{"type": "prefetch", "url": "\#(slow.url("/stalled.mp4"))"}"#)
        XCTAssertEqual(stalled.status, 202, stalled.text)
        let stalledID = try XCTUnwrap(try stalled.json()["id"] as? String)
        var victim: Int?
        XCTAssertTrue(
            waitUntil(seconds: 20) {
                victim = try? cluster.holder(of: stalledID); return victim != nil
            })

        var ids: [String] = []
        var refusedDuringRestart = 0
        for n in 0..<300 {
            if n == 100, let victim {
                kill(cluster.nodes[victim]!.process.processIdentifier, SIGKILL)
                cluster.nodes[victim]!.process.waitUntilExit()
                cluster.nodes[victim] = nil
            }
            if n == 200 { try cluster.postgres.restart() }
            let nodes = cluster.live
            let url = origin.url("/faststart.mp4?n=\(n)")
            let body = #"{"type": "prefetch", "url": "\#(url)", "seconds": 1}"#
            var reply = try submit(nodes[n % nodes.count].base, body)
            // Right after the restart a node may find its pooled connections cut: one more try.
            let deadline = Date().addingTimeInterval(20)
            while reply.status != 202 && Date() < deadline {
                refusedDuringRestart += 1
                reply = try submit(nodes[n % nodes.count].base, body)
            }
            XCTAssertEqual(reply.status, 202, reply.text)
            ids.append(try XCTUnwrap(try reply.json()["id"] as? String))
        }
        XCTAssertNotNil(victim)

        let everyone = (ids + [stalledID]).map { "'\($0)'" }.joined(separator: ",")
        let finished = waitUntil(seconds: 240) {
            (try? cluster.sql("SELECT count(*) FROM mprobe_jobs WHERE state IN ('queued', 'running')")) == "0"
        }
        let states = try cluster.sql("SELECT state, count(*) FROM mprobe_jobs GROUP BY state")
        XCTAssertTrue(finished, states)
        XCTAssertEqual(try cluster.sql("SELECT count(*) FROM mprobe_jobs WHERE id IN (\(everyone))"), "301")
        let unfinished = try cluster.sql(
            "SELECT id, state, error_code, error_message FROM mprobe_jobs WHERE state <> 'done'")
        XCTAssertEqual(states, "done|301", unfinished)
        // One result each, of one item that succeeded.
        XCTAssertEqual(
            try cluster.sql(
                "SELECT count(*) FROM mprobe_jobs WHERE json_array_length(result::json->'items') = 1 "
                    + "AND (result::json->'items'->0->>'ok')::boolean"), "301")
        // The stalled job ran again on another node once the killed node's lease ended.
        let attempts = Int(try cluster.sql("SELECT attempts FROM mprobe_jobs WHERE id = '\(stalledID)'")) ?? 0
        XCTAssertEqual(attempts, 2)
        // Every node answers for every job.
        for node in cluster.live {
            for id in [ids[0], ids[150], ids[299], stalledID] {
                let shown = try HTTPClient.request("GET", node.base + "/v1/jobs/\(id)", headers: auth)
                XCTAssertEqual(try shown.json()["state"] as? String, "done", "\(node.base) \(id)")
            }
        }
        print("ScaleOutTests: \(refusedDuringRestart) submissions refused while PostgreSQL restarted")
    }

    /// PostgreSQL down for a few seconds as a job ends: its result is recorded when it is back (the
    /// lease still holds), not thrown away to run the job again.
    func testAResultIsKeptThroughAShortPostgresOutage() throws {
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        let slow = try FaultServer()
        slow.route("/slow.mp4", .stall(afterBytes: 0, seconds: 2, then: .serve(body: media)))
        let cluster = try Cluster(dir: dir, allow: [slow.port], lease: 20, nodes: 1)
        defer { cluster.stop() }
        let reply = try submit(cluster.live[0].base, #"{"type": "prefetch", "url": "\#(slow.url("/slow.mp4"))"}"#)
        let id = try XCTUnwrap(try reply.json()["id"] as? String)
        XCTAssertTrue(waitUntil(seconds: 20) { (try? cluster.holder(of: id)) != nil })
        cluster.postgres.stop()
        // The job ends while the store is away (its origin answers after 2 s): the node tries to
        // record it, and fails, more than once (its metrics count every try).
        let finishTries = { () -> Int in
            let text =
                (try? HTTPClient.request("GET", cluster.live[0].base + "/metrics", headers: self.auth).text) ?? ""
            let line = text.split(separator: "\n").first {
                $0.hasPrefix(#"mprobe_job_store_calls_total{operation="finish"}"#)
            }
            return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        }
        XCTAssertTrue(waitUntil(seconds: 30) { finishTries() >= 2 }, "the node never tried to record the job's end")
        let down = try HTTPClient.request("GET", cluster.live[0].base + "/v1/jobs/\(id)", headers: auth)
        XCTAssertEqual(down.status, 503, down.text)
        XCTAssertEqual(
            try down.json()["error"].flatMap { ($0 as? [String: Any])?["code"] as? String }, "job_store_unavailable")
        try cluster.postgres.start()
        let job = try cluster.live[0].waitForJob(id, headers: auth, timeout: 30)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        XCTAssertEqual(job["attempts"] as? Int, 1, "recorded by its first run: \(job)")
    }

    /// A cancel asked of one node stops the job on the node that runs it, at once (its NOTIFY),
    /// not at the next lease renewal.
    func testACancelReachesTheNodeThatRunsTheJob() throws {
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        let slow = try FaultServer()
        slow.route("/stalled.mp4", .stall(afterBytes: 0, seconds: 60, then: .serve(body: media)))
        let cluster = try Cluster(dir: dir, allow: [slow.port], lease: 60)
        defer { cluster.stop() }
        let reply = try submit(cluster.live[0].base, #"{"type": "prefetch", "url": "\#(slow.url("/stalled.mp4"))"}"#)
        let id = try XCTUnwrap(try reply.json()["id"] as? String)
        var runner: Int?
        XCTAssertTrue(
            waitUntil(seconds: 20) {
                runner = try? cluster.holder(of: id); return runner != nil
            })
        let other = cluster.live.first { $0 !== cluster.nodes[runner!] }!
        let started = Date()
        let cancelled = try HTTPClient.request("DELETE", other.base + "/v1/jobs/\(id)", headers: auth)
        XCTAssertEqual(cancelled.status, 200, cancelled.text)
        XCTAssertTrue(
            waitUntil(seconds: 10) {
                (try? cluster.sql("SELECT state FROM mprobe_jobs WHERE id = '\(id)'")) == "cancelled"
            })
        // A renewal would have taken 20 s (a third of the lease): the notice did it.
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertEqual(try cluster.sql("SELECT error_code FROM mprobe_jobs WHERE id = '\(id)'"), "cancelled")
    }

    /// Through the front, every request for one URL reaches one node; a prefetch submitted through
    /// the front for a URL warms that node's cache, so with the origin gone ffmpeg plays the window
    /// through the front.
    func testTheFrontRoutesAURLToOneNodeAndItsPrefetchPlaysOffline() throws {
        let origin = try NginxServer(root: CLITestCase.samplesDirectory)
        let cluster = try Cluster(dir: dir, allow: [origin.port], lease: 30)
        defer { cluster.stop() }
        var nodesSeen = Set<String>()
        for n in 0..<24 {
            let url = origin.url("/faststart.mp4?route=\(n)")
            var answered = Set<String>()
            for _ in 0..<3 {
                let reply = try HTTPClient.request(
                    "GET", cluster.frontBase + "/v1/stream?url=" + encoded(url),
                    headers: auth.merging(["Range": "bytes=0-99"]) { $1 })
                XCTAssertEqual(reply.status, 206, reply.text)
                answered.insert(reply.headers["x-mprobe-node"] ?? "none")
            }
            XCTAssertEqual(answered.count, 1, "\(url) reached \(answered)")
            nodesSeen.formUnion(answered)
        }
        XCTAssertEqual(nodesSeen.count, 3, "24 URLs spread over the nodes: \(nodesSeen)")

        let media = origin.url("/moov-at-end.mp4")
        let submitted = try submit(
            cluster.frontBase, #"{"type": "prefetch", "url": "\#(media)", "start": 0, "seconds": 10}"#,
            query: "?url=" + encoded(media))
        XCTAssertEqual(submitted.status, 202, submitted.text)
        let id = try XCTUnwrap(try submitted.json()["id"] as? String)
        XCTAssertTrue(
            waitUntil(seconds: 60) {
                let job = try? HTTPClient.request("GET", cluster.frontBase + "/v1/jobs/\(id)", headers: self.auth)
                    .json()
                return job?["state"] as? String == "done"
            })
        origin.stop()
        let stream = cluster.frontBase + "/v1/stream?url=" + encoded(media) + "&token=" + ScaleOutTests.token
        let play = try runProcess("ffmpeg", ["-v", "error", "-i", stream, "-t", "10", "-f", "null", "-"])
        XCTAssertEqual(play.status, 0, play.stderr)
        XCTAssertTrue(play.stderr.isEmpty, play.stderr)
        // A job naming another URL than the one it is routed by is refused.
        let mismatched = try submit(
            cluster.frontBase, #"{"type": "prefetch", "url": "\#(media)"}"#, query: "?url=" + encoded(media + "?x"))
        XCTAssertEqual(mismatched.status, 400, mismatched.text)
    }

    /// A playlist rewritten by one node names its segments through the front (relative URLs), so
    /// each segment lands on the node its own URL hashes to, and ffmpeg plays it through the front.
    func testAPlaylistsSegmentsAreSpreadOverTheNodesThroughTheFront() throws {
        let www = dir.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let made = try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-t", "16", "-c:v", "libx264",
                "-preset", "ultrafast", "-g", "30", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod",
                www + "/index.m3u8",
            ])
        XCTAssertEqual(made.status, 0, made.stderr)
        let origin = try NginxServer(root: www)
        let cluster = try Cluster(dir: dir, allow: [origin.port], lease: 30)
        defer { cluster.stop() }
        let playlist = cluster.frontBase + "/v1/stream?url=" + encoded(origin.url("/index.m3u8"))
        let rewritten = try HTTPClient.request("GET", playlist, headers: auth)
        XCTAssertEqual(rewritten.status, 200, rewritten.text)
        let segments = rewritten.text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(
            String.init)
        XCTAssertEqual(segments.count, 16, rewritten.text)
        XCTAssertTrue(segments.allSatisfy { $0.hasPrefix("/v1/stream/") }, "relative, through the front: \(segments)")
        var nodes: [String: String] = [:]
        for segment in segments {
            for _ in 0..<2 {
                let reply = try HTTPClient.request("GET", cluster.frontBase + segment, headers: auth)
                XCTAssertEqual(reply.status, 200, "\(segment): \(reply.text.prefix(200))")
                let node = reply.headers["x-mprobe-node"] ?? "none"
                XCTAssertEqual(nodes[segment, default: node], node, "\(segment) reached two nodes")
                nodes[segment] = node
            }
        }
        XCTAssertGreaterThan(Set(nodes.values).count, 1, "16 segments on one node: \(Set(nodes.values))")
        let play = try runProcess(
            "ffmpeg", ["-v", "error", "-i", playlist + "&token=" + ScaleOutTests.token, "-f", "null", "-"])
        XCTAssertEqual(play.status, 0, play.stderr)
        XCTAssertTrue(play.stderr.isEmpty, play.stderr)
    }

    /// A thumbnail job's files are kept in PostgreSQL with the job: every node serves them. They
    /// also go where the job said, one PUT each (nginx's WebDAV), the job's result naming where,
    /// its signature hidden.
    func testAThumbnailJobsFilesAreReadableThroughEveryNodeAndArriveAtItsDestination() throws {
        let origin = try NginxServer(root: CLITestCase.samplesDirectory)
        let davRoot = dir.file("dav")
        try FileManager.default.createDirectory(atPath: davRoot + "/dav", withIntermediateDirectories: true)
        let dav = try NginxServer(
            root: davRoot,
            locations: "location /dav/ { dav_methods PUT; create_full_put_path on; client_max_body_size 64m; }")
        let cluster = try Cluster(dir: dir, allow: [origin.port, dav.port], lease: 30)
        defer { cluster.stop() }
        let output = dav.url("/dav/thumbs/?sig=s3cr3t")
        let submitted = try submit(
            cluster.live[1].base,
            #"{"type": "thumbnails", "url": "\#(origin.url("/faststart.mp4"))", "count": 4, "sprite": true, "output": "\#(output)"}"#
        )
        XCTAssertEqual(submitted.status, 202, submitted.text)
        let id = try XCTUnwrap(try submitted.json()["id"] as? String)
        let job = try cluster.live[0].waitForJob(id, headers: auth)
        XCTAssertEqual(job["state"] as? String, "done", "\(job)")
        var copies: [[UInt8]] = []
        for node in cluster.live {
            for name in ["manifest.json", "sprite.jpg"] {
                let reply = try HTTPClient.request("GET", node.base + "/v1/jobs/\(id)/files/1/\(name)", headers: auth)
                XCTAssertEqual(reply.status, 200, "\(node.base) \(name): \(reply.text)")
                if name == "sprite.jpg" { copies.append(reply.body) }
            }
        }
        XCTAssertEqual(Set(copies).count, 1, "every node serves the same sprite")
        XCTAssertEqual(Array(copies[0].prefix(3)), [0xFF, 0xD8, 0xFF], "a JPEG")
        // At the destination: every file, the manifest last, byte for byte what the nodes serve.
        let delivered = try FileManager.default.contentsOfDirectory(atPath: davRoot + "/dav/thumbs/1").sorted()
        XCTAssertTrue(delivered.contains("manifest.json") && delivered.contains("sprite.jpg"), "\(delivered)")
        XCTAssertEqual(delivered.filter { $0.hasSuffix(".jpg") }.count, 5, "4 thumbnails and a sprite: \(delivered)")
        XCTAssertEqual(
            Array(try Data(contentsOf: URL(fileURLWithPath: davRoot + "/dav/thumbs/1/sprite.jpg"))), copies[0])
        let puts = try dav.accessLog().filter { $0.method == "PUT" }
        XCTAssertEqual(puts.count, delivered.count, "one PUT a file")
        XCTAssertEqual(puts.last?.path.hasPrefix("/dav/thumbs/1/manifest.json"), true, "the manifest last")
        let result = try XCTUnwrap((job["result"] as? [String: Any])?["items"] as? [[String: Any]]).first
        let shown = try XCTUnwrap(result?["output"] as? String)
        XCTAssertTrue(shown.hasPrefix(dav.url("/dav/thumbs/1/")), shown)
        XCTAssertFalse(shown.contains("s3cr3t"), "the signature is not stored: \(shown)")
        XCTAssertFalse(try cluster.sql("SELECT spec || coalesce(result, '') FROM mprobe_jobs").contains("s3cr3t"))
    }
}
