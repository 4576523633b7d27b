import XCTest

@testable import Containers

/// EBML, a Matroska head and Clusters built in memory: what each reader finds, and what it does
/// with sizes that lie.
final class MatroskaTests: XCTestCase {
    /// An element: its ID bytes, its size as a 1- or 8-byte variable-length integer, its body.
    private func element(_ id: [UInt8], _ body: [UInt8], unknownSize: Bool = false) -> [UInt8] {
        if unknownSize { return id + [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + body }
        if body.count < 127 { return id + [0x80 | UInt8(body.count)] + body }
        return id + [0x01] + be(UInt64(body.count), 7) + body
    }

    private func simpleBlock(track: UInt8, relative: Int16, key: Bool, bytes: Int = 20) -> [UInt8] {
        element(
            [0xA3],
            [0x80 | track] + be(UInt64(UInt16(bitPattern: relative)), 2) + [key ? 0x80 : 0x00]
                + Array(repeating: 0x55, count: bytes))
    }

    private func cluster(_ timecode: UInt64, _ blocks: [[UInt8]], unknownSize: Bool = false) -> [UInt8] {
        element([0x1F, 0x43, 0xB6, 0x75], element([0xE7], be(timecode, 2)) + blocks.joined(), unknownSize: unknownSize)
    }

    private var ebmlHeader: [UInt8] { element([0x1A, 0x45, 0xDF, 0xA3], element([0x42, 0x82], Array("webm".utf8))) }

    private func tracks(_ numbers: [UInt8]) -> [UInt8] {
        element(
            [0x16, 0x54, 0xAE, 0x6B],
            numbers.flatMap { n in
                element([0xAE], element([0xD7], [n]) + element([0x86], Array("V_VP9".utf8)))
            })
    }

    func testVariableLengthIntegersAreReadAsEBMLWritesThem() {
        let cases: [([UInt8], Int??)] = [
            ([0x81], .some(1)),
            ([0x40, 0x02], .some(2)),
            ([0x20, 0x00, 0x03], .some(3)),
            ([0xFF], .some(nil)),  // 1-byte unknown size
            ([0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], .some(nil)),  // 8-byte unknown size
            ([0x01, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00], nil),  // past Int32: unreadable, not a huge read
            ([0x00, 0x81], nil),  // no length marker in the first byte
            ([0x40], nil),  // cut short
            ([], nil),
        ]
        for (bytes, expected) in cases {
            var reader = EBMLReader(bytes: bytes, position: 0)
            let size = reader.size()
            XCTAssertEqual(size, expected, "\(bytes)")
        }
        var ids = EBMLReader(bytes: [0x1A, 0x45, 0xDF, 0xA3, 0xA3, 0x08, 0x00, 0x00, 0x00, 0x00, 0x01], position: 0)
        XCTAssertEqual(ids.id(), 0x1A45_DFA3, "an ID keeps its length marker")
        XCTAssertEqual(ids.id(), 0xA3)
        XCTAssertNil(ids.id(), "an ID of more than four bytes")
    }

    func testTheHeadSaysWhetherThereAreCuesWhereClustersStartAndTheTrackNumbers() throws {
        let seekHead = element(
            [0x11, 0x4D, 0x9B, 0x74], element([0x4D, 0xBB], element([0x53, 0xAB], [0x1C, 0x53, 0xBB, 0x6B])))
        let segmentBody = seekHead + tracks([1, 2]) + cluster(0, [simpleBlock(track: 1, relative: 0, key: true)])
        let file = ebmlHeader + element([0x18, 0x53, 0x80, 0x67], segmentBody, unknownSize: true)
        let head = try XCTUnwrap(MatroskaHead(source: BytesSource(file)))
        XCTAssertEqual(head.cues, true, "its SeekHead names the Cues")
        XCTAssertEqual(head.tracks, [1, 2])
        XCTAssertEqual(
            head.firstCluster, Int64(file.count - cluster(0, [simpleBlock(track: 1, relative: 0, key: true)]).count))
        XCTAssertEqual(head.trackNumber(ofStream: 1, mediaStreams: [0, 1]), 2)
        XCTAssertNil(head.trackNumber(ofStream: 1, mediaStreams: [0]), "entries and streams that do not pair up")

        let noCues = ebmlHeader + element([0x18, 0x53, 0x80, 0x67], tracks([1]) + cluster(0, []), unknownSize: true)
        XCTAssertEqual(try MatroskaHead(source: BytesSource(noCues))?.cues, false)
        XCTAssertTrue(MatroskaHead.startsAMatroskaFile(BytesSource(noCues)))
        XCTAssertNil(try MatroskaHead(source: BytesSource(Array("RIFF....WAVE".utf8))), "not Matroska")
        // A Tracks element claiming more than the head holds ends the walk: no tracks, no Cluster.
        let lying =
            ebmlHeader
            + element([0x18, 0x53, 0x80, 0x67], [0x16, 0x54, 0xAE, 0x6B, 0x10, 0xFF, 0xFF, 0xFF], unknownSize: true)
        let cut = try XCTUnwrap(MatroskaHead(source: BytesSource(lying)))
        XCTAssertEqual(cut.tracks, [])
        XCTAssertNil(cut.firstCluster)
    }

    func testClustersAndTheirBlocksAreFoundInARunOfBytes() throws {
        let first = cluster(
            1000,
            [
                simpleBlock(track: 1, relative: 0, key: true), simpleBlock(track: 2, relative: 5, key: true),
                simpleBlock(track: 1, relative: 40, key: false),
            ])
        let second = cluster(2000, [simpleBlock(track: 1, relative: -3, key: true)])
        let bytes = Array(repeating: 0x00, count: 7) + first + second
        let found = MatroskaClusters.clusters(in: bytes)
        XCTAssertEqual(found.map(\.timecode), [1000, 2000])
        XCTAssertEqual(found.first?.blocks.map(\.timecode), [1000, 1005, 1040])
        XCTAssertEqual(found.first?.blocks.map(\.keyframe), [true, true, false])
        XCTAssertEqual(found.last?.blocks.first?.timecode, 1997, "a negative relative timecode")
        XCTAssertEqual(MatroskaClusters.lastWholeCluster(in: bytes)?.timecode, 2000)
        XCTAssertEqual(MatroskaTail.lastBlockTimecode(in: bytes), 1997)
    }

    func testACutOrLyingClusterIsNotTakenForWhole() throws {
        let whole = cluster(500, [simpleBlock(track: 1, relative: 0, key: true, bytes: 100)])
        let cut = Array(whole.prefix(whole.count - 30))
        XCTAssertNil(MatroskaClusters.cluster(in: cut, at: 0, whole: true), "it runs past the bytes")
        let partial = try XCTUnwrap(MatroskaClusters.cluster(in: cut, at: 0, whole: false))
        XCTAssertNil(partial.end)
        XCTAssertTrue(partial.blocks.isEmpty)
        XCTAssertEqual(partial.cut?.keyframe, true, "the key frame whose header the bytes hold")
        // A Cluster ID followed by no Timecode is no Cluster (bytes inside an attachment).
        XCTAssertNil(
            MatroskaClusters.cluster(
                in: element([0x1F, 0x43, 0xB6, 0x75], element([0xEC], [0, 0])), at: 0, whole: false))
        // Unknown size: it ends where an element no Cluster holds begins.
        let live = cluster(10, [simpleBlock(track: 1, relative: 0, key: true)], unknownSize: true) + cluster(20, [])
        XCTAssertEqual(MatroskaClusters.clusters(in: live).map(\.timecode), [10, 20])
    }
}
