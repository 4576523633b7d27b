import MediaKit
import Reports
import XCTest

/// The text map of a cached resource, line by line: known ranges give known cells.
final class CacheMapTests: XCTestCase {
    /// 1000 bytes over 20 cells of 50: bytes 0-149 and 150-159 cached, then the last 25.
    let ranges: [Range<Int64>] = [0..<100, 110..<160, 975..<1000]

    func testBytesInASCII() {
        // "bytes" + space + 20 cells + space + "17.5%" = 32 columns.
        XCTAssertEqual(
            CacheMap.lines(size: 1000, ranges: ranges, media: nil, width: 32, charset: .ascii),
            ["bytes ##++...............+ 17.5%"])
    }

    func testBytesInUnicode() {
        XCTAssertEqual(
            CacheMap.lines(size: 1000, ranges: ranges, media: nil, width: 32, charset: .unicode),
            ["bytes ██▒▒░░░░░░░░░░░░░░░▒ 17.5%"])
    }

    func testTracksLineUpUnderTheBytesAndTheMoovIsMarked() {
        let media = CachedMedia(
            tracks: [
                TrackBuffer(index: 0, kind: .video, ranges: [0..<2]),
                TrackBuffer(index: 1, kind: .audio, ranges: [0..<1.5, 3..<4]),
            ],
            duration: 4, moov: 950..<1000)
        // Labels 8 wide, suffixes 5: 35 columns leave 20 cells, 0.2 s each for the tracks.
        XCTAssertEqual(
            CacheMap.lines(size: 1000, ranges: ranges, media: media, width: 35, charset: .ascii),
            [
                "bytes    ##++...............m 17.5%",
                "#0 video ##########.......... 2.0 s",
                "#1 audio #######+.......##### 2.5 s",
            ])
        // The moov all cached is `M`.
        XCTAssertEqual(
            CacheMap.lines(size: 1000, ranges: [0..<100, 950..<1000], media: media, width: 35, charset: .unicode)[0],
            "bytes    ██░░░░░░░░░░░░░░░░░M 15.0%")
    }

    func testASmallMoovInALargeFileStillShows() {
        let media = CachedMedia(tracks: [], duration: nil, moov: 500..<600)
        XCTAssertEqual(
            CacheMap.lines(size: 1 << 40, ranges: [0..<4096], media: media, width: 21, charset: .ascii),
            ["bytes M......... 0.1%"], "one cell for the moov; any byte cached is at least 0.1%")
    }

    func testPercentRoundsDownAndOnlyAWholeFileIs100() {
        func percent(_ ranges: [Range<Int64>]) -> String {
            String(
                CacheMap.lines(size: 1_000_000, ranges: ranges, media: nil, width: 40, charset: .ascii)[0]
                    .split(separator: " ").last ?? "")
        }
        XCTAssertEqual(percent([]), "0.0%")
        XCTAssertEqual(percent([0..<999_999]), "99.9%")
        XCTAssertEqual(percent([0..<1_000_000]), "100.0%")
        XCTAssertEqual(percent([0..<500_000]), "50.0%")
    }

    func testAWidthTooNarrowStillDrawsTenCells() {
        XCTAssertEqual(
            CacheMap.lines(size: 1000, ranges: [0..<500], media: nil, width: 5, charset: .ascii),
            ["bytes #####..... 50.0%"])
    }

    func testADurationTheContainerDoesNotStateIsWhatIsBuffered() {
        let media = CachedMedia(
            tracks: [TrackBuffer(index: 0, kind: .audio, ranges: [0..<1, 2..<4])], duration: nil, moov: nil)
        XCTAssertEqual(
            CacheMap.lines(size: 100, ranges: [0..<100], media: media, width: 26, charset: .ascii),
            [
                "bytes    ########## 100.0%",
                "#0 audio ##+..#####  3.0 s",
            ])
    }
}
