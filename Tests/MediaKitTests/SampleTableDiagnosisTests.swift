import ByteSources
import Foundation
import MediaKit
import Synchronization
import TestSupport
import XCTest

/// Fuzzed MP4s used to end in "Cannot allocate memory" or "av_seek_frame: Operation not permitted".
/// Files made like a fuzzer's — an entry count of one sample table overwritten, chosen by a seeded
/// generator — must fail (if they fail) with a sentence naming the table, the track and the count.
final class SampleTableDiagnosisTests: XCTestCase {
    struct Table {
        let type: String
        let offset: Int
        let size: Int
        let track: Int
        /// Where the entry count sits, from the box start.
        var countOffset: Int { type == "stsz" || type == "stz2" ? 16 : 12 }
    }

    var dir: TempDirectory!
    let session = { () -> MediaSession? in try? MediaFixtures.session(cacheDir: nil) }()

    override func setUpWithError() throws { dir = try TempDirectory() }
    override func tearDown() { dir = nil }  // XCTest keeps every test case object: free the folder now

    static func sample() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: MediaFixtures.samples + "/faststart.mp4")))
    }

    /// The sample tables of an MP4 with 32-bit box sizes, with the track (trak order) each belongs to.
    static func tables(_ bytes: [UInt8]) -> [Table] {
        var found: [Table] = []
        var track = -1
        func walk(_ range: Range<Int>) {
            var offset = range.lowerBound
            while offset + 8 <= range.upperBound {
                let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
                guard size >= 8, offset + size <= range.upperBound else { return }
                if type == "trak" { track += 1 }
                if ["moov", "trak", "mdia", "minf", "stbl", "edts"].contains(type) { walk(offset + 8..<offset + size) }
                if ["stts", "ctts", "stss", "stsc", "stco", "stsz"].contains(type) {
                    found.append(Table(type: type, offset: offset, size: size, track: track))
                }
                offset += size
            }
        }
        walk(0..<bytes.count)
        return found
    }

    func patched(_ bytes: [UInt8], _ table: Table, count: UInt32, name: String) throws -> String {
        var bytes = bytes
        for i in 0..<4 {
            bytes[table.offset + table.countOffset + i] = UInt8(truncatingIfNeeded: count >> (24 - 8 * UInt32(i)))
        }
        let path = dir.file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A failure must be a media error naming the table, track and count; FFmpeg's words are not enough.
    func assertExplained(
        _ result: Result<some Any, Error>, _ table: Table, _ count: UInt32, _ what: String,
        line: UInt = #line
    ) -> Bool {
        guard case .failure(let error) = result else { return false }
        XCTAssertTrue(error is MediaError, "\(what): \(error)", line: line)
        XCTAssertTrue(
            "\(error)".contains("the \(table.type) box of track \(table.track) claims \(count)"), "\(what): \(error)",
            line: line)
        return true
    }

    func testCountsOverwrittenLikeAFuzzerDoAreExplained() throws {
        let bytes = try Self.sample()
        let tables = Self.tables(bytes)
        XCTAssertEqual(Set(tables.map(\.type)), ["stts", "ctts", "stss", "stsc", "stco", "stsz"])
        var random = SplitMix64(seed: 0x6D70_726F_6265)
        var failures = 0
        for round in 0..<48 {
            let table = tables[Int(random.next() % UInt64(tables.count))]
            // Just past what the box holds, a few times more, a megabyte's worth, or the top of the range.
            let counts: [UInt32] = [
                UInt32(table.size), UInt32(table.size) * 8, 1 << 20 + UInt32(random.next() % 1000),
                UInt32.max - UInt32(random.next() % 3), UInt32(Int32.max),
            ]
            let count = counts[Int(random.next() % UInt64(counts.count))]
            let path = try patched(bytes, table, count: count, name: "fuzz-\(round).mp4")
            let what = "round \(round): \(table.type) of track \(table.track) = \(count)"
            let session = try XCTUnwrap(session)
            if assertExplained(Result { try Prober().probe(path, session: session) }, table, count, "probe, " + what) {
                failures += 1
            }
            var thumbnailer = Thumbnailer()
            thumbnailer.options.times = .count(3)
            thumbnailer.options.width = 64
            if assertExplained(Result { try thumbnailer.make(path, session: session) }, table, count, "thumbs, " + what)
            {
                failures += 1
            }
        }
        XCTAssertGreaterThan(failures, 40, "most overwritten counts break the file")
    }

    func testASeekWithoutAnIndexNamesTheTrackTheTimeAndTheTable() throws {
        let bytes = try Self.sample()
        let stsz = try XCTUnwrap(Self.tables(bytes).first { $0.type == "stsz" && $0.track == 0 })
        let path = try patched(bytes, stsz, count: 1_000_000, name: "seek.mp4")
        let session = try XCTUnwrap(session)
        // libavformat opens it ("missing mandatory atoms") with no index for the video track.
        XCTAssertEqual(try Prober().probe(path, session: session).tracks.count, 2)
        var thumbnailer = Thumbnailer()
        thumbnailer.options.times = .at([1.5])
        XCTAssertThrowsError(try thumbnailer.make(path, session: session)) { error in
            XCTAssertEqual(
                error as? MediaError,
                .malformed(
                    input: path,
                    detail: "cannot seek track 0 to 1.500 s: the stsz box "
                        + "of track 0 claims 1000000 samples but holds room for 100"))
        }
    }

    func testACheckOfATrackWithoutAnIndexIsNotOK() throws {
        let bytes = try Self.sample()
        let stsz = try XCTUnwrap(Self.tables(bytes).first { $0.type == "stsz" && $0.track == 0 })
        let path = try patched(bytes, stsz, count: 1_000_000, name: "check.mp4")
        let result = try Checker().check(path, session: try XCTUnwrap(session), start: 0, seconds: 1)
        XCTAssertFalse(result.ok, "\(result.tracks)")
        XCTAssertEqual(
            result.tracks.first?.errors, ["the stsz box of track 0 claims 1000000 samples but holds room for 100"])
    }

    func testContainersNestedWithoutEndAreReadWithinBounds() throws {
        // ftyp, then a moov holding a trak holding 9,000 nested mdia boxes: libavformat gives up
        // ("too deeply nested"), and the look at the sample tables must not recurse that deep —
        // batch jobs run on threads with small stacks.
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + body.count)
            return (0..<4).map { UInt8(truncatingIfNeeded: size >> (24 - 8 * UInt32($0))) } + Array(type.utf8) + body
        }
        var nested: [UInt8] = []
        for _ in 0..<9_000 { nested = box("mdia", nested) }
        let path = dir.file("nested.mp4")
        try Data(box("ftyp", Array("isom\0\0\u{2}\0isom".utf8)) + box("moov", box("trak", nested)))
            .write(to: URL(fileURLWithPath: path))
        let session = try XCTUnwrap(session)
        let done = expectation(description: "probed")
        let outcome = Mutex<String>("")
        let thread = Thread {
            let result = Result { try Prober().probe(path, session: session) }
            if case .failure(let error as MediaError) = result { outcome.withLock { $0 = "media error: \(error)" } }
            done.fulfill()
        }
        thread.stackSize = 256 << 10
        thread.start()
        wait(for: [done], timeout: 30)
        XCTAssertTrue(outcome.withLock { $0 }.hasPrefix("media error: "), outcome.withLock { $0 })
    }

    func testASampleToChunkRunPastTheLastChunkIsNamed() throws {
        let path = MediaFixtures.corpus + "/files/mp4parse-rust__chunk_out_of_range.mp4"
        XCTAssertThrowsError(try Prober().probe(path, session: try XCTUnwrap(session))) { error in
            XCTAssertTrue(
                "\(error)".contains(
                    "the stsc box of track 0 starts a run at chunk 16777217 but the stco box holds 1 chunk"),
                "\(error)")
        }
    }
}

/// A small seeded generator (SplitMix64), so the fuzzed files are the same on every run.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
