import Foundation
import TestSupport
import XCTest

/// The samples and bytes per track that a whole-file `prefetch --plan --tracks all` reports against
/// androidx/media's (ExoPlayer's) extractor dumps of the same corpus files: an independent reading
/// of the sample tables. ISO-BMFF (plain and fragmented) from libavformat's index; Matroska and MP3,
/// whose index (Cues, a table of contents) places the window but does not list its samples, from
/// the packets the plan counts when the bytes are local.
final class Media3OracleTests: CLITestCase {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Corpus")

    /// Where the two readings differ on purpose, and why; each checked as stated.
    enum Known {
        /// Media3 reports a track that is not in the container (captions carried in the video).
        case media3HasMore(String)
        /// The container has a track Media3 leaves out.
        case oursHasMore(String)
        /// Media3 drops the samples an edit list cuts; libavformat's index keeps them.
        case editListTrims
        /// The same samples, but Media3 hands out a track's samples in a format of its own (SubRip
        /// cues rewritten with their timing), so their bytes differ.
        case media3Rewrites(String)
    }

    static let known: [String: Known] = [
        "androidx-media__fragmented_captions_h265.mp4": .media3HasMore("CEA-608 captions in the video's SEI"),
        "androidx-media__sample_missing_stsd.mp4": .oursHasMore("the audio track without a sample description"),
        "androidx-media__sample_with_chapters.mp4": .oursHasMore("the chapter text track"),
        "androidx-media__sample_opus.mp4": .editListTrims,
        "androidx-media__sample_with_srt.mkv": .media3Rewrites("SubRip"),
    ]

    /// (samples, bytes) per track of a dump, in its track order.
    private func media3Tracks(_ dump: String) throws -> [(Int, Int)] {
        let lines = try String(contentsOfFile: dump, encoding: .utf8).split(separator: "\n").map(String.init)
        var tracks: [(Int, Int)] = []
        for (i, line) in lines.enumerated() where line.hasPrefix("track ") && i + 2 < lines.count {
            let bytes = Int(lines[i + 1].components(separatedBy: "total output bytes = ").last ?? "")
            let samples = Int(lines[i + 2].components(separatedBy: "sample count = ").last ?? "")
            if let bytes, let samples { tracks.append((samples, bytes)) }
        }
        return tracks
    }

    private func planTracks(_ file: String) throws -> [(Int, Int)] {
        let plan = try json(
            try mprobe([
                "prefetch", file, "--plan", "--tracks", "all", "--start", "0", "--seconds", "1000000",
                "--json", "--cache-dir", cacheDir,
            ]))
        XCTAssertEqual(plan["estimated"] as? Bool, false, file)
        return (plan["tracks"] as? [[String: Any]] ?? []).map {
            ($0["samples"] as? Int ?? -1, $0["bytes"] as? Int ?? -1)
        }
    }

    func testWholeFilePlansCountTheSamplesMedia3Counts() throws {
        let dumps = try FileManager.default.contentsOfDirectory(
            atPath: Self.corpus.appendingPathComponent("dumps").path
        )
        .filter { $0.hasSuffix(".0.dump") }.sorted()
        let indexed = dumps.filter {
            [".mp4", ".mov", ".mkv", ".mka", ".mp3"].contains(where: $0.dropLast(".0.dump".count).hasSuffix)
        }
        XCTAssertGreaterThanOrEqual(indexed.count, 22, "the corpus carries its dumps")
        var matched = 0
        for dump in indexed {
            let name = String(dump.dropLast(".0.dump".count))
            let theirs = try media3Tracks(Self.corpus.appendingPathComponent("dumps/" + dump).path)
            let ours = try planTracks(Self.corpus.appendingPathComponent("files/" + name).path)
            let (a, b) = (Set(theirs.map { "\($0.0)/\($0.1)" }), Set(ours.map { "\($0.0)/\($0.1)" }))
            switch Self.known[name] {
            case nil:
                XCTAssertEqual(
                    ours.map { [$0.0, $0.1] }.sorted { $0.lexicographicallyPrecedes($1) },
                    theirs.map { [$0.0, $0.1] }.sorted { $0.lexicographicallyPrecedes($1) }, name)
                matched += 1
            case .media3HasMore(let what):
                XCTAssertTrue(b.isStrictSubset(of: a), "\(name) (\(what)): ours \(ours), Media3 \(theirs)")
            case .oursHasMore(let what):
                XCTAssertTrue(a.isStrictSubset(of: b), "\(name) (\(what)): ours \(ours), Media3 \(theirs)")
            case .media3Rewrites(let what):
                XCTAssertEqual(ours.map(\.0).sorted(), theirs.map(\.0).sorted(), "\(name) (\(what))")
                XCTAssertEqual(
                    a.subtracting(b).count, 1,
                    "\(name) (\(what)): one track's bytes differ, ours \(ours), Media3 \(theirs)")
            case .editListTrims:
                XCTAssertEqual(ours.count, theirs.count, name)
                for (o, t) in zip(ours, theirs) {
                    XCTAssertGreaterThan(o.0, t.0, name); XCTAssertGreaterThan(o.1, t.1, name)
                }
            }
        }
        XCTAssertGreaterThanOrEqual(matched, 17)  // 14 ISO-BMFF, 2 Matroska, 1 MP3
    }
}
