import ByteSources
import Caching
import Containers
import Foundation
import MediaKit
import RangeFetch
import TestSupport
import XCTest

/// Probing over nginx: moov first, few requests, few bytes, same answers as ffprobe.
final class ProbeRemoteTests: XCTestCase {
    var dir: TempDirectory!
    var nginx: NginxServer!

    override func setUpWithError() throws {
        dir = try TempDirectory()
        nginx = try NginxServer(root: MediaFixtures.samples)
    }

    override func tearDown() {
        nginx.stop()
        dir = nil  // XCTest keeps every test case object: free the folder now
    }

    func probe(_ name: String, prober: Prober = Prober()) throws -> ProbeResult {
        try prober.probe(nginx.url("/\(name)"), session: try MediaFixtures.session(cacheDir: dir.file("cache")))
    }

    func testFaststartSampleNeedsOneRequestAndAgreesWithFFprobe() throws {
        let r = try probe("faststart.mp4")
        XCTAssertEqual(r.layout?.moovPosition, .front)
        XCTAssertEqual(r.layout?.fragmented, false)
        XCTAssertEqual(r.fetch.requests, 1, "ftyp + moov + first samples fit in the first 64 KiB")
        XCTAssertLessThanOrEqual(r.fetch.bytesFetched, BoxWalker.defaultFirstRequest)
        XCTAssertEqual(r.size, 158_106)
        try assertAgreesWithFFprobe(r, MediaFixtures.samples + "/faststart.mp4")
    }

    func testMoovAtEndNeedsTwoRequestsAndTheSecondIsTheMoov() throws {
        let r = try probe("moov-at-end.mp4")
        let moov = try XCTUnwrap(r.layout?.moov)
        XCTAssertEqual(r.layout?.moovPosition, .end)
        XCTAssertEqual(r.fetch.requests, 2)
        XCTAssertLessThanOrEqual(r.fetch.bytesFetched, moov.size + 128 << 10, "at most moov + 128 KiB")
        let log = try nginx.waitForAccessLog(count: 2)
        XCTAssertEqual(log.map(\.range), ["bytes=0-65535", "bytes=\(moov.offset)-\(moov.end - 1)"])
        try assertAgreesWithFFprobe(r, MediaFixtures.samples + "/moov-at-end.mp4")
    }

    func testAMoovLargerThanTheFirstRequestIsFetchedInOneMoreRequest() throws {
        var prober = Prober()
        prober.walker.firstRequest = 1024
        let r = try probe("faststart.mp4", prober: prober)
        let moov = try XCTUnwrap(r.layout?.moov)
        XCTAssertGreaterThan(moov.end, 1024)
        XCTAssertEqual(r.fetch.requests, 2)
        let log = try nginx.waitForAccessLog(count: 2)
        XCTAssertEqual(
            log.last?.range, "bytes=1024-\(moov.end + prober.walker.afterMoov - 1)",
            "the rest of the moov, the next header and the first samples in one request")
    }

    func testFragmentedAndOtherContainers() throws {
        let fragmented = try probe("fragmented.mp4")
        XCTAssertEqual(fragmented.layout?.fragmented, true)
        try assertAgreesWithFFprobe(fragmented, MediaFixtures.samples + "/fragmented.mp4")
        for name in ["sample.webm", "sample.mp3"] {
            let r = try probe(name)
            XCTAssertNil(r.layout, "not ISO-BMFF: no box layout")
            try assertAgreesWithFFprobe(r, MediaFixtures.samples + "/" + name)
        }
    }

    func testFastModeReadsNoSampleData() throws {
        var prober = Prober()
        prober.fast = true
        // Big enough for libavformat's 2 KiB format probe, far too small for any sample data.
        prober.walker.firstRequest = 4096
        let r = try probe("moov-at-end.mp4", prober: prober)
        let moov = try XCTUnwrap(r.layout?.moov)
        XCTAssertEqual(r.fetch.requests, 2)
        XCTAssertEqual(r.fetch.bytesFetched, 4096 + moov.size, "box headers and the moov, nothing else")
        XCTAssertEqual(r.tracks.map(\.codec), ["h264", "aac"])
        XCTAssertEqual(r.duration ?? 0, 4.0, accuracy: 0.01)
    }

    func testRepeatAndOfflineProbeMakeNoRequests() throws {
        _ = try probe("moov-at-end.mp4")
        let offline = try Prober().probe(
            nginx.url("/moov-at-end.mp4"),
            session: try MediaFixtures.session(cacheDir: dir.file("cache"), offline: true))
        XCTAssertEqual(offline.fetch.requests, 0)
        XCTAssertEqual(offline.tracks.count, 2)
        XCTAssertThrowsError(
            try Prober().probe(
                nginx.url("/faststart.mp4"),
                session: try MediaFixtures.session(cacheDir: dir.file("cache"), offline: true))
        ) { error in
            guard case .offlineMiss = error as? SourceError else { return XCTFail("got \(error)") }
        }
    }

    func testAHugeBoxSizeIsAnErrorNotACrash() throws {
        // ftyp, then a 64-bit mdat size of Int64.max: walking must not overflow.
        var bytes: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 2, 0]
        bytes +=
            [0, 0, 0, 1] + Array("mdat".utf8) + [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
            + [UInt8](repeating: 0, count: 64)
        let path = dir.file("huge-box.mp4")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try Prober().probe(path, session: try MediaFixtures.session(cacheDir: nil))) { error in
            XCTAssertTrue(error is MediaError, "\(error)")
        }
    }

    func testCancellationStopsAProbeOfAStalledServer() throws {
        let server = try FaultServer()
        let body = Array(try Data(contentsOf: URL(fileURLWithPath: MediaFixtures.samples + "/moov-at-end.mp4")))
        server.route("/v.mp4", .stall(afterBytes: 100, seconds: 30, then: .serve(body: body)))
        let session = MediaSession(cache: nil, fetchOptions: FetchOptions())
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { session.cancellation.cancel() }
        let started = Date()
        XCTAssertThrowsError(try Prober().probe(server.url("/v.mp4"), session: session)) { error in
            XCTAssertEqual(error as? FetchError, .cancelled(url: server.url("/v.mp4")))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        // Cancelled between reads, libavformat is stopped with AVERROR_EXIT.
        XCTAssertThrowsError(try Prober().probe(MediaFixtures.samples + "/faststart.mp4", session: session)) { error in
            XCTAssertEqual(error as? MediaError, .interrupted)
        }
    }
}
