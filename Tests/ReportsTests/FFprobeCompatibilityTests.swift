import ByteSources
import Foundation
import MediaKit
import Reports
import TestSupport
import XCTest

/// The ffprobe-compatible report (`Prober.details` + `FFprobeReport`) equals what
/// `ffprobe -v error -of json -show_format -show_streams` prints for every corpus file and every
/// sample, read locally: key by key, in ffprobe's order and with its value types, except the
/// documented `FFprobeOracle.knownDifferences`. Where ffprobe cannot read a file, mprobe says
/// why in words (a `MediaError` naming the file). (Over HTTP: `ServiceFFprobeTests`.)
final class FFprobeCompatibilityTests: XCTestCase {
    func testEveryCorpusFileAndSampleReportsAsFFprobeDoes() throws {
        let inputs = try TestMedia.allInputs().map(TestMedia.path)
        XCTAssertEqual(inputs.count, 90, "83 corpus files and 7 samples")
        FFprobeOracle.prepare(FFprobeOracle.formatAndStreams, inputs: inputs)
        let session = MediaSession(cache: nil)
        var compared = 0, rejected = 0
        for input in inputs {
            let name = (input as NSString).lastPathComponent
            let oracle = try FFprobeOracle.run(FFprobeOracle.formatAndStreams + [input])
            let result = Result { try Prober().details(input, session: session) }
            guard oracle.status == 0 else {
                rejected += 1
                guard case .failure(let error) = result else {
                    XCTFail("\(name): ffprobe fails (\(oracle.stderr)), mprobe did not"); continue
                }
                XCTAssertTrue(error is MediaError && "\(error)".contains(name), "\(name): \(error)")
                continue
            }
            guard case .success(let details) = result else { XCTFail("\(name): \(result)"); continue }
            let differences = try FFprobeOracle.differences(
                ffprobe: oracle.stdout, mprobe: Array(FFprobeReport.text(details).utf8),
                input: input)
            XCTAssertEqual(differences, [], name)
            compared += 1
        }
        XCTAssertEqual(compared + rejected, inputs.count)
        XCTAssertEqual(rejected, 6, "files ffprobe cannot read (MANIFEST.tsv's ffprobe_rc)")
    }

    /// ffprobe's layout: four spaces a level, `"key": value`, an empty object or array with an
    /// empty line inside, as `ffprobe -show_entries` prints one.
    func testLayoutIsFFprobes() {
        let json = JSON.object([
            ("programs", .array([])), ("streams", .array([.object([("index", .int(0)), ("tags", .object([]))])])),
        ])
        XCTAssertEqual(
            json.text(indentedBy: 4),
            """
            {
                "programs": [

                ],
                "streams": [
                    {
                        "index": 0,
                        "tags": {

                        }
                    }
                ]
            }
            """)
        XCTAssertEqual(FFprobeReport.failureText, "{\n\n}")
    }
}
