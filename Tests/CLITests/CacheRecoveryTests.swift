import Foundation
import TestSupport
import XCTest

/// A broken cache never locks the user out: a garbage index, a full disk, a read-only directory.
/// The mounts live in a private mount namespace (`unshare -m`), so they vanish with the script.
final class CacheRecoveryTests: CLITestCase {
    /// Serves two origin files and caches both completely in `cacheDir`.
    private func populatedCache() throws -> (nginx: NginxServer, a: String, b: String, data: [UInt8]) {
        let data = randomBytes(600_000, seed: 21)
        _ = try writeFile("www/a.bin", data)
        _ = try writeFile("www/b.bin", data)
        let nginx = try NginxServer(root: dir.file("www"))
        let a = nginx.url("/a.bin"), b = nginx.url("/b.bin")
        try mprobe(["cat", a, "--cache-dir", cacheDir])
        try mprobe(["cat", b, "--cache-dir", cacheDir])
        return (nginx, a, b, data)
    }

    /// The result of one `run NAME ARGS...` line of a script from `inPrivateMounts`.
    private struct Step {
        let status: Int32
        let stdout: [UInt8]
        let stderr: String
        var stdoutString: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `script` as root in a private mount namespace. In it, `run NAME ARGS...` runs mprobe and
    /// keeps its status and output under NAME, and `serve CACHE` starts `mprobe serve` (`$SERVE`,
    /// `$PORT`); `$CACHE` is the cache directory.
    private func inPrivateMounts(_ script: String) throws -> [String: Step] {
        guard geteuid() == 0 else {
            throw TestSupportError.missingExecutable(path: "root", hint: "mounting needs root")
        }
        guard findExecutable("unshare") != nil else {
            throw TestSupportError.missingExecutable(path: "unshare", hint: "install util-linux")
        }
        let results = dir.file("results")
        try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        let prelude = """
            set -u
            run() { name=$1; shift; timeout 120 "$MPROBE" "$@" >"$RESULTS/$name.out" 2>"$RESULTS/$name.err"; echo $? >"$RESULTS/$name.status"; }
            # serve CACHE: mprobe serve in the background ($SERVE), its log in serve.err, once it listens ($PORT).
            serve() {
                "$MPROBE" serve --listen 127.0.0.1:0 --cache-dir "$1" --allow-host 127.0.0.1 2>"$RESULTS/serve.err" &
                SERVE=$!
                i=0; until grep -q "serving on" "$RESULTS/serve.err" || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
                PORT=$(grep -o 'serving on http://127.0.0.1:[0-9]*' "$RESULTS/serve.err" | grep -o '[0-9]*$')
            }

            """
        let shell = try runProcess(
            "unshare", ["-m", "--propagation", "private", "sh", "-c", prelude + script],
            environment: [
                "MPROBE": try mprobeBinary(), "RESULTS": results, "CACHE": cacheDir,
                "SCRATCH": dir.path,
            ],
            timeout: 300)
        XCTAssertEqual(shell.status, 0, "setup script failed: \(shell.stderr)")
        var steps: [String: Step] = [:]
        for name in contents(results).filter({ $0.hasSuffix(".status") }).map({ String($0.dropLast(7)) }) {
            let status = try String(contentsOfFile: "\(results)/\(name).status", encoding: .utf8)
            steps[name] = Step(
                status: Int32(status.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1,
                stdout: Array(try Data(contentsOf: URL(fileURLWithPath: "\(results)/\(name).out"))),
                stderr: try String(contentsOfFile: "\(results)/\(name).err", encoding: .utf8))
        }
        return steps
    }

    private func contents(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    private func assertStep(
        _ steps: [String: Step], _ name: String, _ status: Int32,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Step {
        let step = try XCTUnwrap(steps[name], "step \(name) did not run", file: file, line: line)
        XCTAssertEqual(step.status, status, "\(name): \(step.stderr)", file: file, line: line)
        XCTAssertFalse(step.stderr.contains("NSCocoaErrorDomain"), "\(name): \(step.stderr)", file: file, line: line)
        return step
    }

    private func listedURLs(_ step: Step) throws -> Set<String> {
        let list = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(step.stdout)) as? [[String: Any]], step.stdoutString)
        return Set(list.compactMap { $0["url"] as? String })
    }

    func testFullDiskStillAllowsListingOfflineReadsRemovalAndClearing() throws {
        let (nginx, a, b, data) = try populatedCache()
        let steps = try inPrivateMounts(
            """
            MNT="$SCRATCH/mnt"; mkdir -p "$MNT"
            mount -t tmpfs -o size=3m tmpfs "$MNT" || exit 90
            cp -a "$CACHE" "$MNT/cache" || exit 91
            C="$MNT/cache"
            fill() { dd if=/dev/zero of="$MNT/filler-$1" bs=4096 >/dev/null 2>&1; }
            fill 1
            run ls cache ls --json --cache-dir "$C"
            run stats cache stats --json --cache-dir "$C"
            run ranges cache ranges \(a) --json --cache-dir "$C"
            run cat cat \(a) --offline --cache-dir "$C"
            run miss cat \(nginx.url("/none.bin")) --offline --cache-dir "$C"
            run rm cache rm \(b) --cache-dir "$C"
            run ls-after-rm cache ls --json --cache-dir "$C"
            fill 2
            run clear cache clear --cache-dir "$C"
            run ls-after-clear cache ls --json --cache-dir "$C"
            """)
        XCTAssertEqual(try listedURLs(try assertStep(steps, "ls", 0)), [a, b])
        _ = try assertStep(steps, "stats", 0)
        XCTAssertTrue(try assertStep(steps, "ranges", 0).stdoutString.contains("600000"))
        XCTAssertTrue(try assertStep(steps, "cat", 0).stdout == data, "offline read on a full disk")
        _ = try assertStep(steps, "miss", 4)
        _ = try assertStep(steps, "rm", 0)
        XCTAssertEqual(try listedURLs(try assertStep(steps, "ls-after-rm", 0)), [a])
        _ = try assertStep(steps, "clear", 0)
        XCTAssertEqual(try listedURLs(try assertStep(steps, "ls-after-clear", 0)), [])
    }

    /// A full disk stops the cache from keeping what comes next, not readers from getting it: a new
    /// URL, and one whose bytes fill the disk partway, are streamed through whole, by `cat` and by
    /// the service's proxy.
    func testAFullDiskStreamsThroughWhatItCannotStore() throws {
        let (nginx, _, _, _) = try populatedCache()
        let big = randomBytes(6_000_000, seed: 22)
        let names = ["new", "fills", "proxy-fills", "proxy-new"]
        for name in names { _ = try writeFile("www/\(name).bin", big) }
        _ = try writeFile("www/film.mp4", Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("moov-at-end.mp4")))))
        func stream(_ name: String) -> String {
            let url = nginx.url("/\(name).bin").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            return """
                curl -sf -o "$RESULTS/\(name).out" "http://127.0.0.1:$PORT/v1/stream?url=\(url)" 2>"$RESULTS/\(name).err"
                echo $? >"$RESULTS/\(name).status"
                """
        }
        let steps = try inPrivateMounts(
            """
            MNT="$SCRATCH/mnt"; mkdir -p "$MNT/full" "$MNT/room" "$MNT/proxy"
            mount -t tmpfs -o size=3m tmpfs "$MNT/full" || exit 90
            cp -a "$CACHE" "$MNT/full/cache" || exit 91
            dd if=/dev/zero of="$MNT/full/filler" bs=4096 >/dev/null 2>&1
            run new cat \(nginx.url("/new.bin")) --cache-dir "$MNT/full/cache"
            run prefetch prefetch \(nginx.url("/film.mp4")) --seconds 2 --cache-dir "$MNT/full/cache"
            mount -t tmpfs -o size=4m tmpfs "$MNT/room" || exit 92
            run fills cat \(nginx.url("/fills.bin")) --cache-dir "$MNT/room/cache"
            mount -t tmpfs -o size=4m tmpfs "$MNT/proxy" || exit 93
            serve "$MNT/proxy/cache"
            \(stream("proxy-fills"))
            \(stream("proxy-new"))
            kill $SERVE; wait $SERVE; echo $? >"$RESULTS/serve.status"; : >"$RESULTS/serve.out"
            """)
        for name in names {
            let step = try assertStep(steps, name, 0)
            XCTAssertTrue(step.stdout == big, "\(name): \(step.stdout.count) bytes")
        }
        for name in ["new", "fills"] {
            XCTAssertTrue(steps[name]?.stderr.contains("streamed through") ?? false, "\(name) says so")
        }
        // A prefetch is for later: streamed through is of no use to it, and it says why.
        let prefetch = try assertStep(steps, "prefetch", 6).stderr
        XCTAssertTrue(prefetch.contains("cannot store"), prefetch)
        let log = try assertStep(steps, "serve", 0).stderr
        XCTAssertTrue(log.contains("warning: the cache cannot store"), "the service's log says so: \(log)")
    }

    /// What a full disk sends through memory is bounded: a service holds 16 such resources at once
    /// (up to 64 MiB each), and answers the next one 503 (try again) until one is let go.
    func testAFullDiskHoldsAtMostSixteenResourcesInMemory() throws {
        let (nginx, _, _, _) = try populatedCache()
        let first = try writeFile("www/m0.bin", randomBytes(6_000_000, seed: 23))
        for n in 1...17 { try FileManager.default.linkItem(atPath: first, toPath: dir.file("www/m\(n).bin")) }
        func url(_ n: Int) -> String {
            "http://127.0.0.1:$PORT/v1/stream?url="
                + (nginx.url("/m\(n).bin").addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        let slow = (0..<16).map { n in
            "curl -s --limit-rate 50K -o \"$SCRATCH/slow-\(n)\" \"\(url(n))\" & SLOW=\"$SLOW $!\""
        }.joined(separator: "\n")
        let steps = try inPrivateMounts(
            """
            MNT="$SCRATCH/mnt"; mkdir -p "$MNT"
            mount -t tmpfs -o size=3m tmpfs "$MNT" || exit 90
            serve "$MNT/cache"
            dd if=/dev/zero of="$MNT/filler" bs=4096 >/dev/null 2>&1
            SLOW=""
            \(slow)
            # Until each slow player has its first bytes: all 16 resources are in memory.
            i=0; until [ $(find "$SCRATCH" -maxdepth 1 -name 'slow-*' -size +0 | wc -l) -ge 16 ] || [ $i -ge 300 ]; do
                sleep 0.1; i=$((i + 1)); done
            curl -s -o /dev/null -w '%{http_code}' "\(url(16))" >"$RESULTS/seventeenth.out"; echo 0 >"$RESULTS/seventeenth.status"
            : >"$RESULTS/seventeenth.err"
            kill $SLOW; wait $SLOW
            # Once the slow players are gone, their slots come back.
            i=0; until curl -sf -o "$RESULTS/after.out" "\(url(17))" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
            echo $? >"$RESULTS/after.status"; : >"$RESULTS/after.err"
            kill $SERVE; wait $SERVE; :
            """)
        XCTAssertEqual(
            try assertStep(steps, "seventeenth", 0).stdoutString, "503", "a 17th resource in memory waits its turn")
        XCTAssertTrue(try assertStep(steps, "after", 0).stdout == randomBytes(6_000_000, seed: 23))
    }

    /// Moving a corrupt index aside removes its data files first: they make room for the new index.
    func testGarbageIndexOnAFullDiskIsReplacedAndItsSpaceFreed() throws {
        let (nginx, a, _, data) = try populatedCache()
        let steps = try inPrivateMounts(
            """
            MNT="$SCRATCH/mnt"; mkdir -p "$MNT"
            mount -t tmpfs -o size=3m tmpfs "$MNT" || exit 90
            cp -a "$CACHE" "$MNT/cache" || exit 91
            C="$MNT/cache"
            head -c 8192 /dev/urandom >"$C/index.sqlite"
            dd if=/dev/zero of="$MNT/filler" bs=4096 >/dev/null 2>&1
            run ls cache ls --json --cache-dir "$C"
            ls "$C/data" >"$RESULTS/data-files.out"; echo 0 >"$RESULTS/data-files.status"; : >"$RESULTS/data-files.err"
            run refill cat \(a) --cache-dir "$C"
            run offline cat \(a) --offline --cache-dir "$C"
            """)
        let ls = try assertStep(steps, "ls", 0)
        XCTAssertEqual(try listedURLs(ls), [])
        XCTAssertTrue(ls.stderr.contains("corrupt") && ls.stderr.contains("index.sqlite"), ls.stderr)
        XCTAssertFalse(ls.stderr.contains("read-only"), "the new index is writable: \(ls.stderr)")
        XCTAssertEqual(try assertStep(steps, "data-files", 0).stdoutString, "")
        XCTAssertTrue(try assertStep(steps, "refill", 0).stdout == data)
        XCTAssertTrue(try assertStep(steps, "offline", 0).stdout == data)
        withExtendedLifetime(nginx) {}
    }

    func testReadOnlyCacheServesOfflineReads() throws {
        let (nginx, a, _, data) = try populatedCache()
        // A third resource whose data file is gone: its record cannot be trusted, nor dropped here.
        _ = try writeFile("www/c.bin", data)
        let c = nginx.url("/c.bin")
        try mprobe(["cat", c, "--cache-dir", cacheDir])
        XCTAssertEqual(unlink(cacheDir + "/data/3-1.bin"), 0)
        let steps = try inPrivateMounts(
            """
            mount --bind "$CACHE" "$CACHE" && mount -o remount,bind,ro "$CACHE" || exit 90
            touch "$CACHE/probe" 2>/dev/null && exit 91
            run cat cat \(a) --offline --cache-dir "$CACHE"
            run range cat \(a) --offline --range 1000-1999 --cache-dir "$CACHE"
            run miss cat \(nginx.url("/none.bin")) --offline --cache-dir "$CACHE"
            run ls cache ls --json --cache-dir "$CACHE"
            run stats cache stats --json --cache-dir "$CACHE"
            run online cat \(nginx.url("/b.bin")) --cache-dir "$CACHE"
            run lost cat \(c) --offline --cache-dir "$CACHE"
            """)
        XCTAssertTrue(try assertStep(steps, "cat", 0).stdout == data)
        XCTAssertTrue(try assertStep(steps, "range", 0).stdout == Array(data[1000...1999]))
        _ = try assertStep(steps, "miss", 4)
        XCTAssertTrue(try listedURLs(try assertStep(steps, "ls", 0)).isSuperset(of: [a, nginx.url("/b.bin")]))
        _ = try assertStep(steps, "stats", 0)
        // Reading cached bytes needs no write either.
        XCTAssertTrue(try assertStep(steps, "online", 0).stdout == data)
        XCTAssertEqual(try assertStep(steps, "lost", 4).stdout, [], "nothing of a record without its data file")
    }

    /// `chmod 0500` stops only its owner (root ignores it), so the reads run as another user.
    func testDirectoryItsOwnerMadeReadOnlyServesOfflineReads() throws {
        guard geteuid() == 0 && findExecutable("setpriv") != nil else {
            return XCTFail("needs root and setpriv to act as another user")
        }
        let (nginx, a, _, data) = try populatedCache()
        XCTAssertEqual(chmod(dir.path, 0o755), 0)
        XCTAssertEqual(try runProcess("chown", ["-R", "65534:65534", cacheDir]).status, 0)
        XCTAssertEqual(chmod(cacheDir, 0o500), 0)
        func asNobody(_ args: [String]) throws -> ProcessResult {
            try runProcess(
                "setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", try mprobeBinary()]
                    + args + ["--cache-dir", cacheDir], timeout: 120)
        }
        let offline = try asNobody(["cat", a, "--offline"])
        XCTAssertEqual(offline.status, 0, offline.stderr)
        XCTAssertTrue(offline.stdout == data)
        XCTAssertEqual(try asNobody(["cat", nginx.url("/none.bin"), "--offline"]).status, 4)
        let ls = try asNobody(["cache", "ls", "--json"])
        XCTAssertEqual(ls.status, 0, ls.stderr)
        XCTAssertTrue(try listedURLs(Step(status: ls.status, stdout: ls.stdout, stderr: ls.stderr)).contains(a))
        XCTAssertEqual(try mode(cacheDir), 0o500, "a directory made read-only stays so")
    }

    private func mode(_ path: String) throws -> mode_t {
        var st = stat()
        guard stat(path, &st) == 0 else { throw TestSupportError.system(call: "stat \(path)", errno: errno) }
        return st.st_mode & 0o7777
    }

    func testGarbageIndexIsReportedMovedAsideAndTheCacheWorksAgain() throws {
        let (nginx, a, _, data) = try populatedCache()
        defer { withExtendedLifetime(nginx) {} }  // it serves the refetch below
        try Data(randomBytes(8192, seed: 2)).write(to: URL(fileURLWithPath: cacheDir + "/index.sqlite"))
        let ls = try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir])
        XCTAssertTrue(ls.stderr.contains("warning") && ls.stderr.contains(cacheDir + "/index.sqlite"), ls.stderr)
        XCTAssertEqual(try listedURLs(Step(status: ls.status, stdout: ls.stdout, stderr: ls.stderr)), [])
        try mprobe(["cat", a, "--offline", "--cache-dir", cacheDir], expect: 4)
        XCTAssertTrue(try mprobe(["cat", a, "--cache-dir", cacheDir]).stdout == data)
        XCTAssertTrue(try mprobe(["cat", a, "--offline", "--cache-dir", cacheDir]).stdout == data)
    }

    func testClearResetsACacheWhoseIndexCannotBeOpened() throws {
        let (_, a, _, _) = try populatedCache()
        let victim = dir.file("victim")
        try Data("not yours".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.removeItem(atPath: cacheDir + "/index.sqlite")
        XCTAssertEqual(symlink(victim, cacheDir + "/index.sqlite"), 0)
        let refused = try mprobe(["cache", "ls", "--cache-dir", cacheDir], expect: 6)
        XCTAssertTrue(refused.stderr.contains(cacheDir + "/index.sqlite"), refused.stderr)
        try mprobe(["cache", "clear", "--cache-dir", cacheDir])
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "not yours")
        XCTAssertEqual(contents(cacheDir + "/data"), [])
        XCTAssertEqual(try cachedRanges(a).count, 0)
    }

    func testForeignOwnedCacheDirectoryIsAClearError() throws {
        guard geteuid() == 0 else { return XCTFail("needs root to give a directory away") }
        try FileManager.default.createDirectory(atPath: cacheDir, withIntermediateDirectories: true)
        XCTAssertEqual(chown(cacheDir, 65534, 65534), 0)
        for args in [["cache", "ls"], ["cache", "clear"]] {
            let result = try mprobe(args + ["--cache-dir", cacheDir], expect: 6)
            XCTAssertTrue(result.stderr.contains(cacheDir), result.stderr)
            XCTAssertFalse(result.stderr.contains("NSCocoaErrorDomain"), result.stderr)
        }
        XCTAssertEqual(contents(cacheDir), [])
    }
}
