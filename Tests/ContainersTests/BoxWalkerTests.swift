import ByteSources
import XCTest

@testable import Containers

/// The ISO-BMFF walk over boxes built in memory: where it finds the moov, what it notes of a
/// damaged layout, and that no stated size makes it read, loop or allocate past the file.
final class BoxWalkerTests: XCTestCase {
    private let ftyp = box("ftyp", Array("isom".utf8) + be(0x200, 4) + Array("isommp41".utf8))
    private let moov = box(
        "moov", box("mvhd", Array(repeating: 0, count: 100)) + box("trak", box("tkhd", Array(repeating: 0, count: 84))))
    private let mdat = box("mdat", Array(repeating: 0xAB, count: 5000))

    private func walk(_ bytes: [UInt8], _ configure: (inout BoxWalker) -> Void = { _ in }) throws -> MP4Layout? {
        var walker = BoxWalker()
        configure(&walker)
        return try walker.walk(BytesSource(bytes))
    }

    func testTheMoovIsFoundInFrontOrAtTheEnd() throws {
        let front = try XCTUnwrap(walk(ftyp + moov + mdat))
        XCTAssertEqual(front.boxes.map(\.type), ["ftyp", "moov", "mdat"])
        XCTAssertEqual(front.moovPosition, .front)
        XCTAssertEqual(front.moov?.offset, Int64(ftyp.count))
        XCTAssertNil(front.damaged)
        XCTAssertFalse(front.fragmented)

        let end = try XCTUnwrap(walk(ftyp + mdat + moov))
        XCTAssertEqual(end.moovPosition, .end)
        XCTAssertEqual(end.moov?.range, Int64(ftyp.count + mdat.count)..<Int64(ftyp.count + mdat.count + moov.count))
    }

    func testSizesOfEveryFormAreRead() throws {
        // A 64-bit size (1, then the size after the type) and size 0 (to the end of the file).
        let large = be(1, 4) + Array("mdat".utf8) + be(UInt64(16 + 40), 8) + Array(repeating: 0, count: 40)
        let toTheEnd = be(0, 4) + Array("free".utf8) + Array(repeating: 0, count: 30)
        let layout = try XCTUnwrap(walk(ftyp + moov + large + toTheEnd))
        XCTAssertEqual(layout.boxes.map(\.type), ["ftyp", "moov", "mdat", "free"])
        XCTAssertEqual(layout.boxes[2].headerSize, 16)
        XCTAssertEqual(layout.boxes[2].size, 56)
        XCTAssertEqual(layout.boxes[3].size, Int64(toTheEnd.count))
    }

    func testAFragmentedLayoutIsSaidSo() throws {
        let fragmentedMoov = box(
            "moov",
            box("mvhd", Array(repeating: 0, count: 100)) + box("mvex", box("trex", Array(repeating: 0, count: 24))))
        let layout = try XCTUnwrap(walk(ftyp + fragmentedMoov + box("moof", box("mfhd", be(0, 8))) + mdat))
        XCTAssertTrue(layout.fragmented)
        XCTAssertTrue(layout.movieExtends)
    }

    func testWhatIsNotISOBMFFIsNil() throws {
        for (name, bytes) in [
            ("text", Array("hello, this is not a video file".utf8)), ("too short", [0, 0, 0]),
            ("an unknown first box", box("zzzz", [1, 2, 3])),
            ("EBML", [0x1A, 0x45, 0xDF, 0xA3] + Array(repeating: 0, count: 20)),
        ] {
            XCTAssertNil(try walk(bytes), name)
        }
    }

    func testDamagedAndHostileLayoutsAreNotedOrRefused() throws {
        // A moov claiming more than the file: refused before its body is fetched, or with
        // acceptsACutMoov (ffprobe's mode) taken to the end of the file and noted.
        let cut = ftyp + be(1_000_000, 4) + Array("moov".utf8) + Array(repeating: 0, count: 100)
        XCTAssertThrowsError(try walk(cut)) { error in
            guard case MediaError.malformed(_, let detail) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(detail.contains("claims 1000000 bytes"), detail)
        }
        let accepted = try XCTUnwrap(walk(cut) { $0.acceptsACutMoov = true })
        XCTAssertEqual(accepted.moov?.end, Int64(cut.count))
        XCTAssertNotNil(accepted.damaged)

        // A moov larger than any header: refused, whatever the file's size says.
        let huge = ftyp + be(1, 4) + Array("moov".utf8) + be(UInt64(Int64.max), 8)
        XCTAssertThrowsError(try walk(huge), "a 64-bit size past the file")

        // An mdat that runs past the end (a cut download): kept to the end and noted.
        let truncated = try XCTUnwrap(walk(ftyp + moov + be(99_999, 4) + Array("mdat".utf8) + [1, 2, 3]))
        XCTAssertEqual(truncated.boxes.last?.end, Int64(ftyp.count + moov.count + 11))
        XCTAssertTrue(truncated.damaged?.contains("claims 99999 bytes") == true, truncated.damaged ?? "not noted")

        // Sizes that cannot be a box's, after the first: the walk stops there and says why.
        for (name, bytes, expected) in [
            ("a size below its header", be(4, 4) + Array("free".utf8), "impossible size 4"),
            ("a 64-bit size below its header", be(1, 4) + Array("free".utf8) + be(8, 8), "impossible size 8"),
            ("a 64-bit size past Int64", be(1, 4) + Array("free".utf8) + be(UInt64.max, 8), "overflows"),
            ("a type that is no text", be(16, 4) + [0, 1, 2, 3] + be(0, 8), "unreadable box header"),
        ] as [(String, [UInt8], String)] {
            let layout = try XCTUnwrap(walk(ftyp + moov + bytes), name)
            XCTAssertTrue(layout.damaged?.contains(expected) == true, "\(name): \(layout.damaged ?? "not noted")")
            XCTAssertEqual(layout.boxes.map(\.type), ["ftyp", "moov"], name)
        }
    }

    func testAThousandTinyBoxesAreWalkedInBoundedSteps() throws {
        let frees = (0..<1000).flatMap { _ in box("free") }
        let layout = try XCTUnwrap(walk(ftyp + frees + moov))
        XCTAssertEqual(layout.boxes.count, 1002)
        XCTAssertEqual(layout.moovPosition, .front)
    }
}
