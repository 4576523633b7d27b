import Foundation
import Serving
import TestSupport
import XCTest

/// The API as a contract: `/openapi.json` is `docs/openapi.json`, a valid OpenAPI 3.1 document
/// (by `openapi-spec-validator` from PyPI, not a check written here) that describes exactly the
/// routes the server has, and what the server answers fits it.
final class OpenAPITests: XCTestCase {
    static let documentPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.json").path

    func testTheServedDocumentIsTheOneInDocsAndValid() throws {
        let service = try ServiceHarness(token: "t")
        defer { service.stop() }
        let served = try service.get("/openapi.json")
        XCTAssertEqual(served.status, 200, "the description needs no token")
        XCTAssertEqual(served.headers["content-type"], "application/json")
        XCTAssertEqual(served.body, Array(try Data(contentsOf: URL(fileURLWithPath: OpenAPITests.documentPath))))
        let file = service.dir.file("openapi.json")
        try Data(served.body).write(to: URL(fileURLWithPath: file))
        let validated = try runProcess("python3", ["-m", "openapi_spec_validator", file], timeout: 120)
        XCTAssertEqual(validated.status, 0, validated.stdoutString + validated.stderr)
        XCTAssertTrue(validated.stdoutString.contains("OK"), validated.stdoutString)
    }

    func testItDescribesExactlyTheRoutesTheServerHas() throws {
        let document = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: OpenAPITests.documentPath)))
                as? [String: Any])
        XCTAssertEqual(document["openapi"] as? String, "3.1.0")
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: Any]])
        let methods: Set<String> = ["get", "head", "post", "put", "delete", "patch", "options"]
        let described = Set(
            paths.flatMap { path, operations in
                operations.keys.filter(methods.contains).map { "\($0.uppercased()) \(path)" }
            })
        let served = Set(Service.endpoints.flatMap { endpoint in endpoint.methods.map { "\($0) \(endpoint.path)" } })
        XCTAssertEqual(described.subtracting(served).sorted(), [], "described but not served")
        XCTAssertEqual(served.subtracting(described).sorted(), [], "served but not described")
        // Each operation names the statuses it answers; every error status has the Error schema.
        for (path, operations) in paths {
            for (method, value) in operations where methods.contains(method) {
                let operation = try XCTUnwrap(value as? [String: Any])
                XCTAssertNotNil(operation["operationId"], "\(method) \(path)")
                let responses = try XCTUnwrap(operation["responses"] as? [String: Any], "\(method) \(path)")
                XCTAssertNotNil(responses["421"], "\(method) \(path) says a foreign Host is 421")
            }
        }
    }

    /// What the server answers matches what the document says of it: statuses listed for the
    /// operation, and the members its schemas require.
    func testAnswersFitTheDocument() throws {
        let nginx = try NginxServer(root: samplesDirectory)
        defer { nginx.stop() }
        let service = try ServiceHarness()
        defer { service.stop() }
        let document = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: OpenAPITests.documentPath)))
                as? [String: Any])
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: Any]])
        let schemas = try XCTUnwrap((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let media = nginx.url("/faststart.mp4")
        let job = try service.postJob(#"{"type": "prefetch", "url": "\#(media)", "seconds": 1}"#)
        let id = try XCTUnwrap(try job.json()["id"] as? String)
        _ = try service.waitForJob(id)
        let calls: [(String, String, String, [UInt8]?)] = [
            ("GET", "/healthz", "/healthz", nil), ("GET", "/v1/health", "/v1/health", nil),
            ("GET", "/v1/probe", "/v1/probe?url=" + media, nil), ("GET", "/v1/cache", "/v1/cache", nil),
            ("GET", "/v1/cache/resources", "/v1/cache/resources", nil),
            ("GET", "/v1/cache/ranges", "/v1/cache/ranges?url=" + media, nil),
            ("GET", "/v1/jobs", "/v1/jobs?limit=5", nil), ("GET", "/v1/jobs/{id}", "/v1/jobs/" + id, nil),
            ("GET", "/v1/jobs/{id}", "/v1/jobs/nope", nil),
            ("POST", "/v1/jobs", "/v1/jobs", Array(#"{"type": "nope"}"#.utf8)),
            ("POST", "/v1/jobs", "/v1/jobs", Array(#"{"type": "prefetch", "url": "\#(media)", "seconds": 1}"#.utf8)),
            ("DELETE", "/v1/jobs/{id}", "/v1/jobs/" + id, nil), ("DELETE", "/v1/cache", "/v1/cache?url=" + media, nil),
        ]
        for (method, template, target, body) in calls {
            let reply = try HTTPClient.request(method, service.url(target), body: body)
            let operation = try XCTUnwrap(
                paths[template]?[method.lowercased()] as? [String: Any], "\(method) \(template)")
            let responses = try XCTUnwrap(operation["responses"] as? [String: Any])
            let described = try XCTUnwrap(
                (responses["\(reply.status)"] ?? responses["default"]) as? [String: Any],
                "\(method) \(target) answered \(reply.status), which the document does not list")
            guard let content = described["content"] as? [String: Any],
                let json = content["application/json"] as? [String: Any],
                let schema = json["schema"] as? [String: Any]
            else { continue }
            let answer = try JSONSerialization.jsonObject(with: Data(reply.body))
            // An object, or an array of the schema's items.
            let objects = (answer as? [String: Any]).map { [$0] } ?? (answer as? [[String: Any]] ?? [])
            let itemSchema = (OpenAPITests.resolved(schema, schemas: schemas)["items"] as? [String: Any]) ?? schema
            XCTAssertTrue(answer is [String: Any] || answer is [Any], "\(method) \(target)")
            for object in objects {
                for member in OpenAPITests.required(answer is [Any] ? itemSchema : schema, schemas: schemas) {
                    XCTAssertNotNil(
                        object[member],
                        "\(method) \(target) (\(reply.status)) lacks \(member), which the document requires")
                }
            }
        }
    }

    /// The schema a `$ref` names, or the schema itself.
    private static func resolved(_ schema: [String: Any], schemas: [String: [String: Any]]) -> [String: Any] {
        guard let reference = schema["$ref"] as? String, let name = reference.split(separator: "/").last,
            let target = schemas[String(name)]
        else { return schema }
        return resolved(target, schemas: schemas)
    }

    /// The members a schema (or the one it refers to) requires.
    private static func required(_ schema: [String: Any], schemas: [String: [String: Any]]) -> [String] {
        resolved(schema, schemas: schemas)["required"] as? [String] ?? []
    }
}
