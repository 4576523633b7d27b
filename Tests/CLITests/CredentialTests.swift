import Foundation
import TestSupport
import XCTest

/// A password in a URL reaches the origin and nothing else: not stdout, stderr, the thumbnail
/// manifest, nor the cache index.
final class CredentialTests: CLITestCase {
    let secret = "S3cr3tPW"

    func testAPasswordInTheURLIsSentButNeverShownOrStored() throws {
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        let server = try FaultServer()
        server.route("/v.mp4", .serve(body: media))
        server.route("/gone.mp4", .status(404))
        let url = server.url("/v.mp4").replacingOccurrences(of: "http://", with: "http://alice:\(secret)@")
        let gone = server.url("/gone.mp4").replacingOccurrences(of: "http://", with: "http://alice:\(secret)@")
        let out = dir.file("thumbs")
        var outputs: [ProcessResult] = []
        outputs.append(try mprobe([url, "--cache-dir", cacheDir]))
        outputs.append(try mprobe([url, "--json", "--cache-dir", cacheDir]))
        outputs.append(try mprobe(["prefetch", url, "--seconds", "1", "--json", "--cache-dir", cacheDir]))
        outputs.append(
            try mprobe(["thumbs", url, "--count", "2", "--sprite", "--json", "--out", out, "--cache-dir", cacheDir]))
        outputs.append(try mprobe(["cache", "ls", "--cache-dir", cacheDir]))
        outputs.append(try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir]))
        outputs.append(try mprobe(["cache", "ranges", url, "--json", "--cache-dir", cacheDir]))
        outputs.append(try mprobe([gone, "--cache-dir", cacheDir], expect: 3))
        outputs.append(try mprobe([gone, url, "--json", "--cache-dir", cacheDir], expect: 1))
        outputs.append(try mprobe(["cat", gone, "--cache-dir", cacheDir], expect: 3))
        for result in outputs {
            XCTAssertFalse(
                result.stdoutString.contains(secret) || result.stderr.contains(secret),
                result.stdoutString + result.stderr)
        }
        XCTAssertTrue(outputs[1].stdoutString.contains("http://***@127.0.0.1"), outputs[1].stdoutString)
        XCTAssertTrue(outputs[7].stderr.contains("HTTP 404"), outputs[7].stderr)

        for name in try FileManager.default.contentsOfDirectory(atPath: out) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: out + "/" + name))
            XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(name) holds the password")
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: cacheDir) where name.hasPrefix("index.sqlite") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: cacheDir + "/" + name))
            XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(name) holds the password")
            XCTAssertNil(bytes.range(of: Data("alice".utf8)), "\(name) holds the user name")
        }
        // The credential went to the origin with every request.
        let expected = "Basic " + Data("alice:\(secret)".utf8).base64EncodedString()
        XCTAssertFalse(server.requests.isEmpty)
        XCTAssertTrue(server.requests.allSatisfy { $0.headers["authorization"] == expected })
        // The same resource with and without credentials is one cache entry.
        let list = try mprobe(["cache", "ls", "--json", "--cache-dir", cacheDir]).stdoutString
        XCTAssertEqual(list.components(separatedBy: "\"url\"").count - 1, 1, list)
    }

    func testHeaderValuesAndSignaturesAreNeverShownOrStored() throws {
        let media = Array(try Data(contentsOf: URL(fileURLWithPath: samplePath("faststart.mp4"))))
        let server = try FaultServer()
        server.route("/v.mp4", .serve(body: media))
        let url = server.url(
            "/v.mp4?X-Amz-Credential=credSECRET&X-Amz-Signature=sigSECRET&X-Amz-Security-Token=tokSECRET")
        let secrets = ["hdrSECRET", "credSECRET", "sigSECRET", "tokSECRET"]
        let headers = ["-H", "X-Api-Key: hdrSECRET", "--cache-key", "s3", "--cache-dir", cacheDir]
        let out = dir.file("t")
        var outputs: [ProcessResult] = []
        outputs.append(try mprobe([url, "--json"] + headers))
        outputs.append(try mprobe(["thumbs", url, "--count", "2", "--sprite", "--json", "--out", out] + headers))
        outputs.append(try mprobe(["prefetch", url, "--seconds", "1", "--json"] + headers))
        outputs.append(try mprobe(["probe", url, "--of", "ffprobe"] + headers))
        outputs.append(
            try mprobe([
                "ffprobe", "-v", "error", "-of", "json", "-show_format", url, "--header", "X-Api-Key: hdrSECRET",
                "--cache-key", "s3", "--cache-dir", cacheDir,
            ]))
        outputs.append(try mprobe(["cache", "ls", "--json"] + headers))
        outputs.append(try mprobe(["cache", "ranges", url] + headers))
        outputs.append(try mprobe([server.url("/missing.mp4?X-Amz-Signature=sigSECRET")] + headers, expect: 3))
        for result in outputs {
            for secret in secrets {
                XCTAssertFalse(
                    result.stdoutString.contains(secret) || result.stderr.contains(secret),
                    "\(secret): \(result.stdoutString) \(result.stderr)")
            }
        }
        var files = try FileManager.default.contentsOfDirectory(atPath: out).map { out + "/" + $0 }
        files += try FileManager.default.contentsOfDirectory(atPath: cacheDir).filter { $0.hasPrefix("index.sqlite") }
            .map { cacheDir + "/" + $0 }
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            for secret in secrets { XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(file) holds \(secret)") }
        }
        XCTAssertTrue(
            server.requests.allSatisfy { $0.headers["x-api-key"] == "hdrSECRET" }, "the header went with every request")
    }
}
