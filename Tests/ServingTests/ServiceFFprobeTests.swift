import Foundation
import TestSupport
import XCTest

/// `GET /v1/probe?url=URL&of=ffprobe` answers what ffprobe prints for the same URL, key by key,
/// for every corpus file and every sample served by nginx: mprobe reading through its cache with
/// range requests, ffprobe reading the URL itself. Files ffprobe cannot read are a 422 with
/// mprobe's error.
final class ServiceFFprobeTests: XCTestCase {
    func testProbeOfFFprobeEqualsFFprobeOverHTTPForEveryFile() throws {
        let nginx = try NginxServer(root: TestMedia.repoRoot)
        let harness = try ServiceHarness()
        defer { harness.stop() }
        let urls = try TestMedia.allInputs().map { nginx.url("/" + $0) }
        FFprobeOracle.prepare(FFprobeOracle.formatAndStreams, inputs: urls)
        var compared = 0, rejected = 0
        for url in urls {
            let name = (url as NSString).lastPathComponent
            let oracle = try FFprobeOracle.run(FFprobeOracle.formatAndStreams + [url])
            let reply = try HTTPClient.request("GET", harness.url("/v1/probe", origin: url, extra: "&of=ffprobe"))
            guard oracle.status == 0 else {
                rejected += 1
                XCTAssertEqual(reply.status, 422, "\(name): \(reply.text)")
                let error = try reply.json()["error"] as? [String: Any]
                XCTAssertEqual(error?["code"] as? String, "not_media", name)
                XCTAssertTrue((error?["message"] as? String ?? "").contains(name), "\(name): \(reply.text)")
                continue
            }
            XCTAssertEqual(reply.status, 200, "\(name): \(reply.text)")
            XCTAssertEqual(reply.headers["content-type"], "application/json", name)
            XCTAssertEqual(
                try FFprobeOracle.differences(ffprobe: oracle.stdout, mprobe: reply.body, input: url), [], name)
            compared += 1
        }
        XCTAssertEqual(compared, 84)
        XCTAssertEqual(rejected, 6)
        // A second look comes from the cache and says the same.
        let again = try HTTPClient.request("GET", harness.url("/v1/probe", origin: urls[0], extra: "&of=ffprobe"))
        XCTAssertEqual(
            try FFprobeOracle.differences(
                ffprobe: try FFprobeOracle.run(FFprobeOracle.formatAndStreams + [urls[0]]).stdout,
                mprobe: again.body, input: urls[0]), [])
    }

    func testOfMustBeMprobeOrFFprobe() throws {
        let nginx = try NginxServer(root: samplesDirectory)
        let harness = try ServiceHarness()
        defer { harness.stop() }
        let url = nginx.url("/faststart.mp4")
        let mprobe = try HTTPClient.request("GET", harness.url("/v1/probe", origin: url, extra: "&of=mprobe")).json()
        XCTAssertEqual(mprobe["url"] as? String, url, "of=mprobe is the default object")
        let bad = try HTTPClient.request("GET", harness.url("/v1/probe", origin: url, extra: "&of=xml"))
        XCTAssertEqual(bad.status, 400, bad.text)
    }
}
