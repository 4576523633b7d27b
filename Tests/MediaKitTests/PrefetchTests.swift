import ByteSources
import Caching
import Foundation
import MediaKit
import RangeFetch
import TestSupport
import XCTest

/// Prefetch plans from the index, fetched over nginx, then played back offline from the cache.
final class PrefetchTests: XCTestCase {
    /// The plan libavformat's reading gives, without what other players read besides (their
    /// profiles are tested in PlayerProfileTests): the floors below are its.
    private var libavformat: PrefetchPlanner {
        var planner = PrefetchPlanner()
        planner.players = [.ffmpeg]
        return planner
    }

    static var media: TempDirectory? { LongMedia.directory }

    var cache: TempDirectory!
    var nginx: NginxServer!

    override func setUpWithError() throws {
        let media = try XCTUnwrap(Self.media, "a temporary directory for the test media")
        XCTAssertTrue(FileManager.default.fileExists(atPath: media.file("long.mp4")), "ffmpeg made the test media")
        cache = try TempDirectory()
        nginx = try NginxServer(root: media.path)
    }

    override func tearDown() {
        nginx.stop()
        cache = nil  // XCTest keeps every test case object: free the folder now
    }

    func online() throws -> MediaSession { try MediaFixtures.session(cacheDir: cache.path) }
    func offline() throws -> MediaSession { try MediaFixtures.session(cacheDir: cache.path, offline: true) }

    @discardableResult
    func prefetch(
        _ name: String, start: Double, seconds: Double, tracks: TrackSelection = .defaults
    ) throws -> PrefetchPlan {
        let session = try online()
        let (plan, _, source) = try libavformat.plan(
            nginx.url("/" + name), session: session, start: start,
            seconds: seconds, tracks: tracks)
        try Prefetcher().fetch(plan, source: source, cancellation: session.cancellation)
        return plan
    }

    func testWindowInTheMiddleIsPlannedFromTheKeyFrameFetchedAtTheFloorAndPlaysOffline() throws {
        let plan = try prefetch("long.mp4", start: 12.3, seconds: 5)
        XCTAssertFalse(plan.estimated)
        let video = try XCTUnwrap(plan.tracks.first { $0.kind == .video })
        let audio = try XCTUnwrap(plan.tracks.first { $0.kind == .audio })
        let firstVideo = try XCTUnwrap(video.firstTime)
        XCTAssertTrue(firstVideo <= 12.3 && firstVideo > 10.2, "from the key frame at or before 12.3 s: \(firstVideo)")
        // Index times are decode times: with B-frames the key frames' DTS sit 2 frames before their PTS.
        XCTAssertEqual(abs(firstVideo.remainder(dividingBy: 2)), 0, accuracy: 0.1, "key frames every 2 s")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(video.lastTime), 17.3 - 0.05)
        XCTAssertLessThanOrEqual(try XCTUnwrap(audio.firstTime), 12.3)

        // What the server sent: at most 1.1× the floor, in at most merged ranges + 2 requests.
        let log = try nginx.waitForAccessLog(count: 3)
        let sent = log.reduce(0) { $0 + $1.bodyBytesSent }
        XCTAssertLessThanOrEqual(
            Double(sent), 1.1 * Double(plan.floorBytes) + 65_536, "sent \(sent), floor \(plan.floorBytes)")
        XCTAssertLessThanOrEqual(log.count, plan.sampleRanges.count + 2)

        // Offline: the window plays; the buffered ranges say so; another window is a clear miss.
        let checked = try Checker().check(nginx.url("/long.mp4"), session: try offline(), start: 12.3, seconds: 5)
        XCTAssertTrue(checked.ok, "\(checked.tracks)")
        XCTAssertEqual(checked.tracks.first { $0.kind == .video }?.frames ?? 0, 125, accuracy: 2)
        XCTAssertEqual(checked.fetch.requests, 0)
        let buffered = try BufferedRanges.cachedMedia(nginx.url("/long.mp4"), session: try offline()).tracks
        for track in buffered where track.kind == .video || track.kind == .audio {
            XCTAssertTrue(track.ranges.contains { $0.lowerBound <= 12.3 && $0.upperBound >= 17.3 }, "\(track.ranges)")
        }
        XCTAssertThrowsError(try Checker().check(nginx.url("/long.mp4"), session: try offline(), start: 25, seconds: 2))
        { error in
            guard case .offlineMiss(_, let range) = error as? SourceError else { return XCTFail("got \(error)") }
            XCTAssertGreaterThan(range.lowerBound, plan.sampleRanges.last!.upperBound)
        }
    }

    func testFaststartFromTheStart() throws {
        let plan = try prefetch("long-faststart.mp4", start: 0, seconds: 4)
        XCTAssertEqual(
            plan.tracks.first { $0.kind == .video }?.firstTime ?? -1, 0, accuracy: 0.1, "the first key frame (DTS)")
        let checked = try Checker().check(
            nginx.url("/long-faststart.mp4"), session: try offline(), start: 0, seconds: 4)
        XCTAssertTrue(checked.ok, "\(checked.tracks)")
        XCTAssertEqual(checked.tracks.first { $0.kind == .video }?.frames ?? 0, 100, accuracy: 2)
    }

    func testAlreadyCachedRangesAreNotFetchedAgain() throws {
        let first = try prefetch("long.mp4", start: 3, seconds: 4)
        nginx.clearLog()
        let again = try prefetch("long.mp4", start: 3, seconds: 4)
        XCTAssertTrue(again.missing.isEmpty)
        XCTAssertEqual(try nginx.accessLog().count, 0)
        // An overlapping window fetches only what is new: no request touches the first window's bytes.
        let cached = ByteRangeSet(first.sampleRanges + first.headerRanges)
        let later = try prefetch("long.mp4", start: 5, seconds: 4)
        XCTAssertFalse(later.missing.isEmpty)
        let log = try nginx.waitForAccessLog(count: later.missing.count)
        XCTAssertEqual(log.count, later.missing.count)
        for entry in log {
            let bounds = try XCTUnwrap(entry.range).dropFirst("bytes=".count).split(separator: "-").compactMap {
                Int64($0)
            }
            XCTAssertEqual(
                cached.gaps(in: bounds[0]..<bounds[1] + 1), [bounds[0]..<bounds[1] + 1],
                "re-requested cached bytes: \(entry.range ?? "-")")
        }
    }

    func testFragmentedAudioOnlyAndSeveralAudioTracks() throws {
        for name in ["fragmented.mp4", "audio-only.m4a", "two-audio.mp4"] {
            let plan = try prefetch(name, start: 1, seconds: 2, tracks: .all)
            XCTAssertFalse(plan.estimated, name)
            let checked = try Checker().check(
                nginx.url("/" + name), session: try offline(), start: 1, seconds: 2, tracks: .all)
            XCTAssertTrue(checked.ok, "\(name): \(checked.tracks)")
            for t in checked.tracks { XCTAssertGreaterThan(t.frames, 0, "\(name) #\(t.index)") }
        }
        let session = try online()
        let (defaults, _, _) = try libavformat.plan(
            nginx.url("/two-audio.mp4"), session: session, start: 0, seconds: 1)
        XCTAssertEqual(defaults.tracks.map(\.index), [0, 1], "the default video and the default (English) audio")
        let (audio, _, _) = try libavformat.plan(
            nginx.url("/two-audio.mp4"), session: session, start: 0, seconds: 1,
            tracks: .some(indices: [], kinds: [.audio]))
        XCTAssertEqual(audio.tracks.map(\.index), [1, 2])
        let (onlyAudio, _, _) = try libavformat.plan(
            nginx.url("/audio-only.m4a"), session: session, start: 0, seconds: 1)
        XCTAssertEqual(onlyAudio.tracks.map(\.kind), [.audio])
        XCTAssertThrowsError(
            try libavformat.plan(
                nginx.url("/two-audio.mp4"), session: session, start: 0, seconds: 1,
                tracks: .some(indices: [7], kinds: [])))
    }

    /// MPEG-TS has no index: the window is estimated from the bit rate, and the plan says so.
    func testContainerWithoutIndexGetsAnEstimatedWindowAndSaysSo() throws {
        let media = try XCTUnwrap(Self.media)
        let dir = try TempDirectory()
        let ts = try runProcess(
            "/usr/bin/ffmpeg",
            ["-v", "error", "-i", media.file("long.mp4"), "-c", "copy", "-f", "mpegts", dir.file("long.ts")])
        XCTAssertEqual(ts.status, 0, ts.stderr)
        let server = try NginxServer(root: dir.path)
        let (plan, _, _) = try libavformat.plan(
            server.url("/long.ts"), session: try online(), start: 10, seconds: 2)
        XCTAssertTrue(plan.estimated)
        XCTAssertTrue(
            plan.note?.contains("mpegts has no usable index here: the byte window is estimated from the bit rate")
                == true,
            plan.note ?? "")
    }

    /// A WebM whose last Cue point comes before the window: the Cues place it from there to the
    /// end of the file (before: estimated from the bit rate, as if it had no index).
    func testCuesPlaceAWindowPastTheirLastPoint() throws {
        let (plan, _, _) = try libavformat.plan(
            nginx.url("/sample.webm"), session: try online(), start: 1, seconds: 1)
        XCTAssertFalse(plan.estimated)
        XCTAssertTrue(plan.note?.contains("the clusters its Cues place") == true, plan.note ?? "")
        XCTAssertEqual(plan.sampleRanges.last?.upperBound, 81_685, "to the end of the file")
    }

    /// Every worker of a wave has its request out at once, whatever the number of CPUs: the server
    /// holds each answer for a while, so requests that were not sent side by side would reuse a
    /// connection (this machine has 2 cores; the wave asks for 6).
    func testAWaveSendsAllItsRequestsAtOnce() throws {
        let server = try FaultServer()
        defer { server.stop() }
        let body = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        server.route("/slow.bin", .delay(seconds: 0.5, then: .serve(body: body)))
        let session = try MediaFixtures.session(cacheDir: cache.path)
        let source = try session.open(server.url("/slow.bin"))
        var prefetcher = Prefetcher()
        prefetcher.connections = 6
        let ranges = (0..<6).map { Int64($0) * 100_000..<Int64($0) * 100_000 + 50_000 }
        try prefetcher.fetch(ranges, source: source, cancellation: session.cancellation)
        let requests = server.requests
        XCTAssertEqual(requests.count, 6)
        XCTAssertEqual(
            Set(requests.map(\.connection)).count, 6, "one connection per range: \(requests.map(\.connection))")
        XCTAssertTrue(ranges.allSatisfy { source.isLocal($0) })
    }

    /// An origin that allows a client two connections resets the wave's others: their ranges go
    /// to the connections that work, and the wave completes (it failed with "connection refused"
    /// once the wave really ran in parallel).
    func testAWaveCompletesAgainstAnOriginThatLimitsConnections() throws {
        let server = try FaultServer(maxConnections: 2)
        defer { server.stop() }
        let body = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        server.route("/capped.bin", .delay(seconds: 0.2, then: .serve(body: body)))
        let session = try MediaFixtures.session(cacheDir: cache.path)
        let source = try session.open(server.url("/capped.bin"))
        var prefetcher = Prefetcher()
        prefetcher.connections = 8
        let ranges = (0..<8).map { Int64($0) * 120_000..<Int64($0) * 120_000 + 60_000 }
        try prefetcher.fetch(ranges, source: source, cancellation: session.cancellation)
        XCTAssertTrue(ranges.allSatisfy { source.isLocal($0) })
        var got = [UInt8](repeating: 0, count: 60_000)
        for range in ranges {
            let n = try got.withUnsafeMutableBytes { try source.read(into: $0, at: range.lowerBound) }
            XCTAssertEqual(Array(got[0..<n]), Array(body[Int(range.lowerBound)..<Int(range.lowerBound) + n]))
        }
    }

}
