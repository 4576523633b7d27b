import Foundation
import TestSupport
import XCTest

/// `mprobe thumbs` with the built binary: files, manifest, sprite + WebVTT, batches.
final class ThumbsCommandTests: CLITestCase {
    func testThumbnailsManifestSpriteAndStoryboard() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let out = dir.file("out")
        let r = try mprobe([
            "thumbs", nginx.url("/moov-at-end.mp4"), "--every", "1", "--width", "160", "--sprite", "2x2",
            "--out", out, "--json", "--cache-dir", cacheDir,
        ])
        let j = try json(r)
        let thumbs = try XCTUnwrap(j["thumbnails"] as? [[String: Any]])
        XCTAssertEqual(thumbs.map { $0["time"] as? Double }, [0, 1, 2, 3])
        XCTAssertEqual(
            thumbs.map { $0["file"] as? String },
            [
                "thumb-000000.000.jpg", "thumb-000001.000.jpg",
                "thumb-000002.000.jpg", "thumb-000003.000.jpg",
            ])
        XCTAssertEqual(thumbs.first?["width"] as? Int, 160)
        XCTAssertEqual(thumbs.first?["height"] as? Int, 90)
        XCTAssertEqual(j["sprite"] as? String, "sprite.jpg")
        XCTAssertEqual(j["vtt"] as? String, "thumbs.vtt")
        for t in thumbs {
            let data = try Data(contentsOf: URL(fileURLWithPath: out + "/" + (t["file"] as! String)))
            XCTAssertEqual(Array(data.prefix(2)), [0xFF, 0xD8])
        }
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as? [String: Any]
        XCTAssertEqual((manifest?["thumbnails"] as? [Any])?.count, 4)
        XCTAssertEqual(manifest?["url"] as? String, nginx.url("/moov-at-end.mp4"))
        let vtt = try String(contentsOfFile: out + "/thumbs.vtt", encoding: .utf8)
        XCTAssertTrue(vtt.hasPrefix("WEBVTT\n"))
        XCTAssertTrue(vtt.contains("00:00:01.000 --> 00:00:02.000\nsprite.jpg#xywh=160,0,160,90\n"), vtt)
        XCTAssertTrue(vtt.contains("00:00:03.000 --> 00:00:04.000\nsprite.jpg#xywh=160,90,160,90\n"), vtt)
        let probe = try runProcess(
            "/usr/bin/ffprobe",
            [
                "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                out + "/sprite.jpg",
            ])
        XCTAssertEqual(
            probe.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines), "320,180", "a 2x2 grid of 160x90")
    }

    func testBatchWritesAFolderPerInputAndReportsFailures() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let out = dir.file("batch")
        let inputs = [
            nginx.url("/faststart.mp4"), nginx.url("/audio-only.m4a"), CLITestCase.samplesDirectory + "/sample.webm",
            nginx.url("/missing.mp4"),
        ]
        let r = try mprobe(
            ["thumbs"] + inputs + [
                "--count", "2", "--format", "png", "--out", out, "-j", "2", "--cache-dir", cacheDir,
            ],
            expect: 1)
        XCTAssertTrue(r.stderr.contains("no video track"), r.stderr)
        XCTAssertTrue(r.stderr.contains("HTTP 404"), r.stderr)
        for folder in ["faststart", "sample"] {
            let files = try FileManager.default.contentsOfDirectory(atPath: out + "/" + folder)
            XCTAssertEqual(files.filter { $0.hasSuffix(".png") }.count, 2, "\(folder): \(files)")
            XCTAssertTrue(files.contains("manifest.json"))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + "/audio-only"))
    }

    func testUsageErrors() throws {
        try mprobe(["thumbs", "x.mp4", "--every", "2", "--count", "3"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--format", "gif"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--at", "1,two"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--sprite=3y3"], expect: 2)
        try mprobe(["thumbs", "x.mp4", "--out", ""], expect: 2)
        // A directory given as the input list is a mistake, not an empty list.
        XCTAssertTrue(try mprobe(["thumbs", "-i", dir.path], expect: 2).stderr.contains("is a directory"))
        // A grid with a capital X is the grid, not an input named 5X4.
        let grid = try mprobe([
            "thumbs", samplePath("faststart.mp4"), "--sprite", "5X4", "--count", "2", "--out", dir.file("g"),
            "--no-cache", "--json",
        ])
        XCTAssertTrue(try json(grid)["sprites"] != nil || grid.stdoutString.contains("sprite"), grid.stdoutString)
    }

    func testAnOutputFolderThatCannotBeMadeIsExitSixNamingItBeforeAnyFetch() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        let file = try writeFile("a-file", [1, 2, 3])
        for (out, text) in [
            (file, "cannot create the output folder \(file): it is a file"),
            (file + "/sub", "cannot create the output folder \(file)/sub: \(file) is a file"),
            ("/dev/null", "cannot create the output folder /dev/null: it is not a folder"),
        ] {
            let r = try mprobe(
                ["thumbs", nginx.url("/faststart.mp4"), "--out", out, "--cache-dir", cacheDir], expect: 6)
            XCTAssertTrue(r.stderr.contains(text), r.stderr)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            // A batch fails as a whole, before any input is fetched.
            try mprobe(
                [
                    "thumbs", nginx.url("/faststart.mp4"), nginx.url("/moov-at-end.mp4"), "--out", out,
                    "--cache-dir", cacheDir,
                ], expect: 6)
        }
        XCTAssertEqual(try nginx.accessLog().count, 0, "nothing fetched")
    }

    func testAnUnwritableOutputFolderIsExitSixNamingIt() throws {
        let locked = dir.file("locked")
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(locked, 0o555), 0)
        XCTAssertEqual(chmod(dir.path, 0o711), 0, "others may pass through the test folder")
        // Root writes anywhere: run as nobody then, so the permission bits count.
        let asNobody = getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        for (out, text) in [
            (locked, "cannot write to the output folder \(locked): permission denied"),
            (locked + "/sub", "cannot create the output folder \(locked)/sub: permission denied"),
        ] {
            let argv =
                asNobody + [
                    try mprobeBinary(), "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--no-cache",
                    "--out", out,
                ]
            let r = try runProcess(argv[0], Array(argv.dropFirst()))
            XCTAssertEqual(r.status, 6, r.stderr)
            XCTAssertTrue(r.stderr.contains(text), r.stderr)
        }
    }

    func testAWriteThatFailsIsExitSixNamingTheFile() throws {
        // A file size limit of 512 bytes (with SIGXFSZ ignored) makes the thumbnail's write fail
        // part way, as a full disk does, without needing a file system of our own.
        let out = dir.file("full")
        let command = [
            "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--at", "0", "--out", out, "--no-cache",
        ]
        let r = try runProcess(
            "/bin/sh", ["-c", "ulimit -f 1; trap '' XFSZ; exec \"$0\" \"$@\"", try mprobeBinary()] + command)
        XCTAssertEqual(r.status, 6, r.stderr)
        XCTAssertTrue(r.stderr.contains("cannot write \(out)/thumb-000000.000.jpg: file too large"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: out), [], "no partial or temporary file is left")
    }

    /// Output names are predictable: links planted at them are replaced, never written through.
    func testLinksPlantedInTheOutputFolderAreNotFollowed() throws {
        let out = dir.file("planted")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let victim = try writeFile("victim.txt", Array("precious".utf8))
        for name in ["thumb-000000.000.jpg", "manifest.json"] {
            try FileManager.default.createSymbolicLink(atPath: out + "/" + name, withDestinationPath: victim)
        }
        try FileManager.default.createSymbolicLink(
            atPath: out + "/thumbs.vtt", withDestinationPath: dir.file("dangling-new-file"))
        try mprobe([
            "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--at", "0", "--sprite", "1x1", "--out", out,
            "--no-cache",
        ])
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "precious")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("dangling-new-file")))
        for name in try FileManager.default.contentsOfDirectory(atPath: out) {
            let type = try FileManager.default.attributesOfItem(atPath: out + "/" + name)[.type] as? FileAttributeType
            XCTAssertEqual(type, .typeRegular, name)
        }
    }

    func testSpriteGridsBeyondTheSheetBoundsAreUsageErrorsBeforeAnyFetch() throws {
        let nginx = try NginxServer(root: CLITestCase.samplesDirectory)
        for grid in [
            ["--sprite", "4000000000x4000000000"], ["--sprite", "3000x3000"], ["--sprite", "100x100"],
            ["--sprite", "20x20", "--width", "640"], ["--sprite=1x9000", "--height", "16"],
            ["--sprite", "1x364"],
        ] {
            let r = try mprobe(
                ["thumbs", nginx.url("/faststart.mp4"), "--out", dir.file("o"), "--cache-dir", cacheDir] + grid,
                expect: 2)
            XCTAssertTrue(r.stderr.contains("65500 pixels a side"), "\(grid): \(r.stderr)")
        }
        XCTAssertEqual(try nginx.accessLog().count, 0, "nothing fetched")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("o")))
    }

    func testMoreThumbnailsThanCellsGoOnFurtherSheets() throws {
        let out = dir.file("sheets")
        let r = try mprobe([
            "thumbs", CLITestCase.samplesDirectory + "/moov-at-end.mp4", "--every", "1", "--width", "160", "--sprite",
            "3x1",
            "--out", out, "--json", "--no-cache",
        ])
        let j = try json(r)
        XCTAssertEqual(j["sprite"] as? String, "sprite.jpg")
        XCTAssertEqual(j["sprites"] as? [String], ["sprite.jpg", "sprite-2.jpg"])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as? [String: Any]
        XCTAssertEqual(manifest?["sprites"] as? [String], ["sprite.jpg", "sprite-2.jpg"])
        let vtt = try String(contentsOfFile: out + "/thumbs.vtt", encoding: .utf8)
        XCTAssertTrue(vtt.contains("00:00:02.000 --> 00:00:03.000\nsprite.jpg#xywh=320,0,160,90\n"), vtt)
        XCTAssertTrue(vtt.contains("00:00:03.000 --> 00:00:04.000\nsprite-2.jpg#xywh=0,0,160,90\n"), vtt)
        func size(_ file: String) throws -> String {
            try runProcess(
                "/usr/bin/ffprobe",
                ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", out + "/" + file]
            )
            .stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        XCTAssertEqual(try size("sprite.jpg"), "480,90", "three cells")
        XCTAssertEqual(try size("sprite-2.jpg"), "160,90", "the last sheet holds what is left")
        // A one-cell grid is a sheet per thumbnail, not a failure after all the work.
        let one = try json(
            try mprobe([
                "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--sprite", "1x1", "--out", dir.file("one"),
                "--json", "--no-cache",
            ]))
        XCTAssertEqual((one["sprites"] as? [String])?.count, 20)
    }

    /// Runs the binary under GNU time and returns its exit status and peak resident memory. (A
    /// child's own rusage would not do: posix_spawn shares the test runner's memory until exec, and
    /// Linux counts that in the child's peak; time forks from its own small process.)
    func peakMemory(_ args: [String]) throws -> (status: Int32, kilobytes: Int) {
        let time = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: time) else {
            throw TestSupportError.missingExecutable(
                path: time, hint: "install Debian's time package (apt-get install time)")
        }
        let r = try runProcess(time, ["-f", "max-rss-kb %M", try mprobeBinary()] + args, timeout: 300)
        let line = try XCTUnwrap(r.stderr.split(separator: "\n").last { $0.hasPrefix("max-rss-kb ") }, r.stderr)
        return (r.status, try XCTUnwrap(Int(line.dropFirst("max-rss-kb ".count))))
    }

    func testSpriteMemoryIsOneSheetNotEveryPicture() throws {
        func peakKB(_ args: [String]) throws -> Int {
            let r = try peakMemory(
                [
                    "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4", "--out", dir.file(args.joined()),
                    "--no-cache",
                ] + args)
            XCTAssertEqual(r.status, 0, "\(args)")
            return r.kilobytes
        }
        // One 6400x3600 sheet: its YUV frame and the encoder's copy (~106 MB over the ~60 MB base).
        // The old code also kept 400 RGB pictures (69 MB) and an RGB sheet: a 230 MB peak.
        let big = try peakKB(["--count", "400", "--sprite", "20x20"])
        XCTAssertLessThan(big, 200_000, "peak RSS \(big) KB")
        XCTAssertGreaterThan(big, 100_000, "the 35 MB sheet and its copy are counted: the measure works")
        // Flat in the number of thumbnails: four 10x10 sheets cost what one does (the old code kept
        // 300 more pictures, +52 MB).
        let one = try peakKB(["--count", "100", "--sprite", "10x10"])
        let four = try peakKB(["--count", "400", "--sprite", "10x10"])
        XCTAssertLessThan(four - one, 24_000, "100 thumbnails: \(one) KB, 400: \(four) KB")
    }

    func testTheDefaultOutputFolderIsRelativeToTheWorkingDirectory() throws {
        let r = try runProcess(
            "/usr/bin/env",
            [
                "-C", dir.path, try mprobeBinary(), "thumbs", CLITestCase.samplesDirectory + "/faststart.mp4",
                "--count", "1", "--no-cache",
            ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.file("thumbs/manifest.json")))
    }

    func testADamagedSampleTableIsExitFiveNamingTheTableAndTrack() throws {
        let sample = Array(try Data(contentsOf: URL(fileURLWithPath: CLITestCase.samplesDirectory + "/faststart.mp4")))
        /// The sample with the entry count of the first `type` box (the video track's) set to `count`.
        func damaged(_ type: String, count: UInt32, countOffset: Int) throws -> String {
            var bytes = sample
            let at =
                try XCTUnwrap((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual(type.utf8) }) - 4
                + countOffset
            for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: count >> (24 - 8 * UInt32(i))) }
            return try writeFile(type + ".mp4", bytes)
        }
        // libavformat said "Cannot allocate memory" here.
        let stco = try damaged("stco", count: 2_147_483_647, countOffset: 12)
        for command in [["probe"], ["thumbs", "--out", dir.file("o")]] {
            let r = try mprobe(command + [stco, "--no-cache"], expect: 5)
            XCTAssertTrue(
                r.stderr.contains("the stco box of track 0 claims 2147483647 chunks but holds room for"), r.stderr)
        }
        // Here libavformat opens the file without an index for the video: "av_seek_frame: Operation not permitted".
        let stsz = try damaged("stsz", count: 1_000_000, countOffset: 16)
        let r = try mprobe(["thumbs", stsz, "--at", "2", "--out", dir.file("o"), "--no-cache"], expect: 5)
        XCTAssertTrue(
            r.stderr.contains("cannot seek track 0 to 2.000 s: the stsz box of track 0 claims 1000000 samples"),
            r.stderr)
    }

    /// A Matroska file with Cues: each thumbnail's key frame is read from its Cluster's head, the
    /// readahead held to the key frame's end (before: libavformat's seek read a 256 KiB window from
    /// each Cluster, 2.96 MB for ten thumbnails of a 10-minute file instead of 1.04), where the head
    /// says its end: the bytes the pictures need (0.30 MB, the floor 0.27), with no stream analysis
    /// reading past the first request (1.04 MB, half of it a readahead window past the head).
    func testThumbnailsOfMatroskaWithCuesReadTheKeyFramesNotReadaheadWindows() throws {
        let www = dir.file("www")
        try encodeRecording(www + "/cues.mkv", muxing: ["-b:v", "1M", "-g", "60", "-f", "matroska"])
        let nginx = try NginxServer(root: www)
        let out = dir.file("t")
        try mprobe(["thumbs", nginx.url("/cues.mkv"), "--at", "5,15,25,35", "--out", out, "--cache-dir", cacheDir])
        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
            as? [String: Any]
        let pts = (manifest?["thumbnails"] as? [[String: Any]] ?? []).compactMap { $0["pts"] as? Double }
        let keys = try runProcess(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,size,flags",
                "-of", "csv=p=0", www + "/cues.mkv",
            ]
        ).stdoutString.split(separator: "\n")
            .filter { $0.contains("K") }.compactMap { line -> (time: Double, size: Int64)? in
                let fields = line.split(separator: ",")
                guard fields.count >= 2, let time = Double(fields[0]), let size = Int64(fields[1]) else { return nil }
                return (time, size)
            }
        let decoded = [5.0, 15.0, 25.0, 35.0].compactMap { time in keys.last { $0.time <= time } }
        XCTAssertEqual(pts, decoded.map(\.time))
        // The first request (64 KiB), the Cues and four key frames, with the few bytes of each
        // Cluster before its key frame: within a fifth of what the pictures need.
        let sent = try nginx.accessLog().reduce(Int64(0)) { $0 + $1.bodyBytesSent }
        let keyFrames = decoded.reduce(Int64(0)) { $0 + $1.size }
        XCTAssertLessThan(sent, (64 << 10) + (16 << 10) + keyFrames * 6 / 5, "key frames \(keyFrames) bytes")
    }
}
