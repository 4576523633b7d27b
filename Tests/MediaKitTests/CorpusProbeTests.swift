import ByteSources
import FFmpeg
import Foundation
import MediaKit
import TestSupport
import XCTest

/// Every file of the real-world corpus (Tests/Corpus, in the repository) probes without a crash, locally
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
        try MediaFixtures.corpusManifest().map { f in
            guard let file = f["local_file"], let rc = f["ffprobe_rc"], let format = f["format_name"],
                let duration = f["duration"], let streams = f["nb_streams"], let codecs = f["codecs"]
            else {
                throw CorpusMissing(detail: "MANIFEST.tsv row without the ffprobe columns: \(f)")
            }
            return Row(
                file: file, ffprobeOK: rc == "0", format: format, duration: Double(duration),
                streams: Int(streams) ?? 0, codecs: codecs.split(separator: ",").map(String.init))
        }
    }

    /// The corpus in the checkout is whole and unchanged: every file the manifest lists is there
    /// with its size and sha256, and so is every dump. (A broken checkout fails here first, with
    /// the names of the missing or changed files.)
    func testCorpusIsCompleteAndUnchanged() throws {
        let rows = try MediaFixtures.corpusManifest()
        XCTAssertEqual(rows.count, 83, "files listed in MANIFEST.tsv")
        var checksums = ""
        for row in rows {
            let file = try XCTUnwrap(row["local_file"])
            let path = MediaFixtures.corpus + "/" + file
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            let size = (attributes?[.size] as? NSNumber)?.int64Value
            XCTAssertEqual(size, row["size_bytes"].flatMap { Int64($0) }, "\(file): missing or of another size")
            checksums += "\(row["sha256"] ?? "")  \(file)\n"
            if let dump = row["oracle_dump"], !dump.isEmpty, let name = dump.split(separator: " ").first {
                XCTAssertTrue(
                    FileManager.default.fileExists(atPath: MediaFixtures.corpus + "/" + name), "\(name) is missing")
            }
        }
        let listed = try TempDirectory()
        try checksums.write(toFile: listed.file("sha256.txt"), atomically: true, encoding: .utf8)
        let check = try runProcess(
            "/bin/sh",
            ["-c", "cd \"$0\" && sha256sum --quiet -c \"$1\"", MediaFixtures.corpus, listed.file("sha256.txt")])
        XCTAssertEqual(check.status, 0, "files differ from MANIFEST.tsv's sha256: \(check.stdoutString)\(check.stderr)")
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
                    guard case .failure(let error) = result else {
                        XCTFail("\(row.file): ffprobe fails, we did not"); continue
                    }
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
                XCTAssertEqual(
                    r.tracks.map { $0.codec == "none" ? "unknown" : $0.codec }, row.codecs, "\(row.file) (\(where_))")
                if let d = row.duration {
                    XCTAssertEqual(r.duration ?? -1, d, accuracy: 0.0015, "\(row.file) (\(where_))")
                }
            }
        }
    }
}
