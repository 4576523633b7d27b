import Foundation
import MediaKit
import MediaSource
import TestSupport
import XCTest

/// Every file of the shared real-world corpus (../shared/corpus) probes without a crash, locally
/// and through nginx + the cache; where ffprobe succeeds, duration and tracks agree with the
/// manifest's ffprobe columns; where it fails, mprobe gives a media error.
///
/// Durations follow ffprobe (libavformat's estimate), not the ExoPlayer dumps: for fragmented
/// files whose mvhd duration is 0, FFmpeg sums the fragments (or reports the mfra's end), and
/// agreeing with the tool people compare us to is the promise.
final class CorpusProbeTests: XCTestCase {
    struct Row {
        let file: String
        let ffprobeOK: Bool
        let format: String
        let duration: Double?
        let streams: Int
        let codecs: [String]
    }

    func manifest() throws -> [Row] {
        let path = MediaFixtures.corpus + "/MANIFEST.tsv"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw TestSupportError.serverFailedToStart("the shared corpus is missing: \(path)")
        }
        var lines = text.split(whereSeparator: \.isNewline).map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = lines.removeFirst()
        func column(_ name: String) throws -> Int {
            guard let i = header.firstIndex(of: name) else { throw TestSupportError.serverFailedToStart("no column \(name)") }
            return i
        }
        let (file, rc, format, duration, streams, codecs) = (try column("local_file"), try column("ffprobe_rc"),
            try column("format_name"), try column("duration"), try column("nb_streams"), try column("codecs"))
        return lines.map { f in
            Row(file: f[file], ffprobeOK: f[rc] == "0", format: f[format], duration: Double(f[duration]),
                streams: Int(f[streams]) ?? 0, codecs: f[codecs].split(separator: ",").map(String.init))
        }
    }

    func testEveryCorpusFileProbesLikeFFprobeLocallyAndRemotely() throws {
        let rows = try manifest()
        XCTAssertGreaterThan(rows.count, 50)
        let dir = try TempDirectory()
        let nginx = try NginxServer(root: MediaFixtures.corpus)
        let remoteSession = try MediaFixtures.session(cacheDir: dir.file("cache"))
        let localSession = try MediaFixtures.session(cacheDir: nil)
        for row in rows {
            let local = Result { try Prober().probe(MediaFixtures.corpus + "/" + row.file, session: localSession) }
            let remote = Result { try Prober().probe(nginx.url("/" + row.file), session: remoteSession) }
            guard row.ffprobeOK else {
                for result in [local, remote] {
                    guard case .failure(let error) = result else { XCTFail("\(row.file): ffprobe fails, we did not"); continue }
                    XCTAssertTrue(error is MediaError || error is FFmpegError, "\(row.file): \(error)")
                }
                continue
            }
            for (where_, result) in [("local", local), ("remote", remote)] {
                guard case .success(let r) = result else {
                    XCTFail("\(row.file) (\(where_)): \(result)")
                    continue
                }
                XCTAssertEqual(r.format, row.format, "\(row.file) (\(where_))")
                XCTAssertEqual(r.tracks.count, row.streams, "\(row.file) (\(where_))")
                // ffprobe prints "unknown" for streams whose codec it has no descriptor for.
                XCTAssertEqual(r.tracks.map { $0.codec == "none" ? "unknown" : $0.codec }, row.codecs, "\(row.file) (\(where_))")
                if let d = row.duration {
                    XCTAssertEqual(r.duration ?? -1, d, accuracy: 0.0015, "\(row.file) (\(where_))")
                }
            }
        }
    }
}
