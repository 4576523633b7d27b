import Foundation
import TestSupport
import XCTest

/// `mprobe ffprobe` and `mprobe probe --of ffprobe` with the built binary, against the real
/// ffprobe given the same options and input.
final class FFprobeCommandTests: CLITestCase {
    /// Inputs with what the options select on: programs (MPEG-TS), a rotation (side data),
    /// subtitles and attachments of Matroska, several audio tracks, tags in several sections.
    static let inputs = [
        "Tests/Corpus/files/androidx-media__sample_h264.ts", "Tests/Corpus/files/mp4parse-rust__video_rotation_90.mp4",
        "Tests/Corpus/files/androidx-media__sample_with_srt.mkv",
        "Tests/Corpus/files/androidx-media__sample_ac3_aac.mp4",
        "Samples/two-audio.mp4",
    ]

    /// The option sets pipelines pass, each compared on every input, locally and over HTTP.
    static let optionSets: [[String]] = [
        ["-v", "error", "-of", "json", "-show_format", "-show_streams"],
        ["-v", "quiet", "-print_format", "json", "-show_entries", "format=duration"],
        ["-hide_banner", "-loglevel", "error", "-of", "json", "-select_streams", "v:0", "-show_streams"],
        [
            "-v", "error", "-of", "json", "-select_streams", "a", "-show_entries",
            "stream=index,codec_name,channels:stream_tags=language",
        ],
        ["-v", "error", "-of", "json", "-select_streams", "1", "-show_format", "-show_entries", "stream=codec_type"],
        ["-v", "error", "-of", "json", "-show_entries", "stream=width,height:stream_disposition=default:format_tags"],
        ["-v", "error", "-of", "json", "-show_streams", "-show_entries", "stream=index"],
        ["-v", "error", "-of", "json", "-show_entries", "stream:format=size"],
        ["-v", "error", "-of", "json"],
    ]

    func testOptionsPipelinesPassPrintWhatFFprobePrints() throws {
        let nginx = try NginxServer(root: TestMedia.repoRoot)
        let inputs = Self.inputs.flatMap { [TestMedia.path($0), nginx.url("/" + $0)] }
        for options in Self.optionSets { FFprobeOracle.prepare(options, inputs: inputs) }
        var compared = 0
        for input in inputs {
            for options in Self.optionSets {
                let expected = try FFprobeOracle.run(options + [input])
                let got = try mprobe(["ffprobe"] + options + [input, "--cache-dir", cacheDir], expect: nil)
                let shown = "ffprobe \(options.joined(separator: " ")) \(input)"
                XCTAssertEqual(got.status, expected.status, "\(shown): \(got.stderr)")
                XCTAssertEqual(
                    try FFprobeOracle.differences(ffprobe: expected.stdout, mprobe: got.stdout, input: input), [], shown
                )
                // Not required, but so far true: the very same text.
                XCTAssertEqual(got.stdoutString, expected.stdoutString, shown)
                compared += 1
            }
        }
        XCTAssertEqual(compared, Self.inputs.count * 2 * Self.optionSets.count)
    }

    func testProbeOfFFprobeIsFFprobesReportForEachInput() throws {
        let nginx = try NginxServer(root: TestMedia.repoRoot)
        let inputs = [TestMedia.path(Self.inputs[0]), nginx.url("/" + Self.inputs[1])]
        let result = try mprobe(["probe", "--of", "ffprobe", "--cache-dir", cacheDir] + inputs)
        // One report after the other, each as ffprobe lays it out (its last line a lone "}").
        let reports = result.stdoutString.components(separatedBy: "\n}\n").dropLast().map { $0 + "\n}\n" }
        XCTAssertEqual(reports.count, 2, result.stdoutString)
        for (input, report) in zip(inputs, reports) {
            let expected = try FFprobeOracle.run(FFprobeOracle.formatAndStreams + [input])
            XCTAssertEqual(
                try FFprobeOracle.differences(ffprobe: expected.stdout, mprobe: Array(report.utf8), input: input), [],
                input)
        }
        let both = try mprobe(["probe", "--of", "ffprobe", "--json", inputs[0]], expect: 2)
        XCTAssertTrue(both.stderr.contains("--json and --of ffprobe"), both.stderr)
        let unknown = try mprobe(["probe", "--of", "xml", inputs[0]], expect: 2)
        XCTAssertTrue(unknown.stderr.contains("--of needs ffprobe or mprobe"), unknown.stderr)
    }

    /// An init segment whose moov runs past the end of the file: ffprobe prints the format with no
    /// streams and exits 0, and so does the drop-in mode (locally, over HTTP and as `--of ffprobe`),
    /// while the native probe keeps its clear error.
    func testACutInitSegmentIsWhatFFprobeMakesOfIt() throws {
        let whole = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("fragmented.mp4"))))
        let cut = try writeFile("www/cut.mp4", Array(whole.prefix(100)))
        let nginx = try NginxServer(root: dir.file("www"))
        for input in [cut, nginx.url("/cut.mp4")] {
            let options = ["-v", "error", "-of", "json", "-show_format", "-show_streams"]
            let expected = try FFprobeOracle.run(options + [input])
            XCTAssertEqual(expected.status, 0)
            let got = try mprobe(["ffprobe"] + options + [input, "--cache-dir", cacheDir])
            XCTAssertEqual(
                try FFprobeOracle.differences(ffprobe: expected.stdout, mprobe: got.stdout, input: input), [], input)
            XCTAssertTrue(got.stdoutString.contains("\"nb_streams\": 0"), got.stdoutString)
            let report = try mprobe(["probe", "--of", "ffprobe", input, "--cache-dir", cacheDir])
            XCTAssertTrue(report.stdoutString.contains("\"nb_streams\": 0"), report.stdoutString)
            let native = try mprobe(["probe", input, "--cache-dir", cacheDir], expect: 5)
            XCTAssertTrue(native.stderr.contains("claims 1249 bytes but the file ends at 100"), native.stderr)
        }
    }

    /// ffprobe's exit status and stdout where the input cannot be read; a usage error (2, nothing
    /// read, the option named) for what mprobe ffprobe does not support.
    func testFailuresAndUnsupportedOptions() throws {
        let missing = dir.file("missing.mp4")
        let notMedia = try writeFile("text.mp4", Array(String(repeating: "not a video\n", count: 100).utf8))
        let sample = samplePath("faststart.mp4")
        for input in [missing, notMedia, TestMedia.path("Tests/Corpus/files/mp4parse-rust__chunk_out_of_range.mp4")] {
            let options = ["-v", "error", "-of", "json", "-show_format", "-show_streams"]
            let expected = try FFprobeOracle.run(options + [input])
            let got = try mprobe(["ffprobe"] + options + [input, "--cache-dir", cacheDir], expect: 1)
            XCTAssertEqual(expected.status, 1, input)
            XCTAssertEqual(got.stdoutString, expected.stdoutString, "ffprobe's empty object: \(input)")
            XCTAssertTrue(
                got.stderr.hasPrefix("mprobe: ") && got.stderr.contains((input as NSString).lastPathComponent),
                got.stderr)
            let quiet = try mprobe(
                ["ffprobe", "-v", "quiet", "-of", "json", "-show_format", input, "--cache-dir", cacheDir], expect: 1)
            XCTAssertEqual(quiet.stderr, "", "-v quiet prints no error")
        }
        XCTAssertEqual(
            try FFprobeOracle.run(["-v", "error", "-of", "json", "-select_streams", "x:y", "-show_streams", sample])
                .status, 1)
        let badSpecifier = try mprobe(
            ["ffprobe", "-v", "error", "-of", "json", "-select_streams", "x:y", "-show_streams", sample], expect: 1)
        XCTAssertTrue(badSpecifier.stderr.contains("-select_streams 'x:y'"), badSpecifier.stderr)

        for (options, named) in [
            (["-show_frames"], "-show_frames"), (["-of", "csv"], "-of csv"), (["-count_packets"], "-count_packets"),
            (["-show_entries", "packet=pts"], "packet"), (["-show_entries", "tags"], "stream_tags"),
            (["-show_entries", "nothing"], "nothing: no such section"), (["-v", "loud"], "-v loud"),
            (["-i", sample], "one input only"), (["-"], "stdin"),
        ] {
            let r = try mprobe(["ffprobe", "-of", "json", "-show_format"] + options + [sample], expect: 2)
            XCTAssertTrue(r.stderr.contains(named), "\(options): \(r.stderr)")
            XCTAssertEqual(r.stdout, [], "nothing printed for a usage error")
        }
        let noInput = try mprobe(["ffprobe", "-of", "json", "-show_format"], expect: 2)
        XCTAssertTrue(noInput.stderr.contains("give one input"), noInput.stderr)
        XCTAssertTrue(try mprobe(["ffprobe", "-h"]).stdoutString.contains("-select_streams"))
    }

    /// The filename is the input as given, but a password in a URL is never printed.
    func testFilenameIsTheInputWithItsPasswordRedacted() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let url = nginx.url("/faststart.mp4").replacingOccurrences(of: "http://", with: "http://user:secret@")
        let r = try mprobe([
            "ffprobe", "-v", "error", "-of", "json", "-show_entries", "format=filename", url, "--no-cache",
        ])
        XCTAssertFalse(r.stdoutString.contains("secret") || r.stderr.contains("secret"), r.stdoutString)
        let filename = try OrderedJSON(parsing: r.stdout)["format"]?["filename"]
        XCTAssertEqual(filename, .string(url.replacingOccurrences(of: "user:secret@", with: "***@")))
    }
}
