import XCTest

@testable import URLSupport

/// The digest behind cache keys of over-long URLs, against the published test vectors (FIPS 180-2
/// and NIST's examples): empty, one block, two blocks, and a million bytes.
final class SHA256Tests: XCTestCase {
    func testTheStandardVectors() {
        let cases: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
            (
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
            ),
            (
                String(repeating: "a", count: 1_000_000),
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
            ),
        ]
        for (message, digest) in cases {
            XCTAssertEqual(SHA256.hex(message), digest, "\(message.prefix(20))… (\(message.utf8.count) bytes)")
        }
    }

    func testEveryLengthAroundABlockBoundaryPadsAsTheStandardSays() {
        // 55 bytes fit the length in their block; 56 to 64 need a second one.
        let known: [Int: String] = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
        ]
        for (count, digest) in known {
            XCTAssertEqual(SHA256.hex(String(repeating: "a", count: count)), digest, "\(count) bytes")
        }
    }
}
