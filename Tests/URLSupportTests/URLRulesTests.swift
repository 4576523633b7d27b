import URLSupport
import XCTest

/// How URLs are keyed and shown: credentials and signatures never shown, signed queries keyed alike.
final class URLRulesTests: XCTestCase {
    func testUserinfoAndSignaturesAreHiddenWhenShown() {
        XCTAssertEqual(URLText.redacted("https://alice:pw@cdn.test/v.mp4"), "https://***@cdn.test/v.mp4")
        XCTAssertEqual(
            URLText.redacted("https://cdn.test/v.mp4?X-Amz-Signature=abc&quality=hd#t=1"),
            "https://cdn.test/v.mp4?X-Amz-Signature=***&quality=hd#t=1")
        XCTAssertEqual(
            URLText.redacted("https://cdn.test/p@th/v.mp4?a=b@c"), "https://cdn.test/p@th/v.mp4?a=b@c",
            "an @ after the authority is not userinfo")
        XCTAssertEqual(
            URLText.redacted("https://cdn.test/v.mp4?token"), "https://cdn.test/v.mp4?token", "a bare name has no value"
        )
        XCTAssertEqual(
            URLText.redacted("https://cdn.test/v.mp4?%74oken=s3"), "https://cdn.test/v.mp4?%74oken=***",
            "encoded names are compared decoded")
        // No parser accepts a password with a "?" in it, but shown in an error it must stay hidden.
        XCTAssertEqual(URLText.redacted("http://user:pa?ss@cdn.test/x"), "http://***@cdn.test/x")
        XCTAssertEqual(
            URLRules.standard.key("http://cdn.test?e=a@b"), "http://cdn.test?e=a@b",
            "keys follow the parser: the query's @ is not userinfo")
    }

    func testPresetsLeaveSignaturesOutOfTheKey() {
        let s3 = URLRules(ignoredQuery: URLRules.presets["s3"]!)
        let one = "https://b.s3.amazonaws.com/v.mp4?X-Amz-Algorithm=AWS4&X-Amz-Signature=aaa&versionId=7"
        let two = "https://b.s3.amazonaws.com/v.mp4?X-Amz-Algorithm=AWS4&X-Amz-Signature=bbb&versionId=7"
        XCTAssertEqual(s3.key(one), "https://b.s3.amazonaws.com/v.mp4?versionId=7")
        XCTAssertEqual(s3.key(one), s3.key(two))
        XCTAssertEqual(
            s3.shown(one), "https://b.s3.amazonaws.com/v.mp4?X-Amz-Algorithm=***&X-Amz-Signature=***&versionId=7")
        let cloudfront = URLRules(ignoredQuery: URLRules.presets["cloudfront"]!)
        XCTAssertEqual(
            cloudfront.key("https://d.cloudfront.net/v.mp4?Expires=1&Signature=x&Key-Pair-Id=k"),
            "https://d.cloudfront.net/v.mp4")
        let all = URLRules(ignoredQuery: URLRules.QueryNames(["*"]))
        XCTAssertEqual(all.key("https://u:p@h.test/v.mp4?a=1&b=2#f"), "https://h.test/v.mp4#f")
    }

    func testRulesCanDifferByHost() {
        let rules = URLRules(
            ignoredQuery: URLRules.QueryNames(["session"]),
            hosts: [(pattern: "*.cdn.test", ignoredQuery: URLRules.QueryNames(["sig*"]))])
        XCTAssertEqual(rules.key("https://a.cdn.test/v.mp4?sigA=1&session=2"), "https://a.cdn.test/v.mp4?session=2")
        XCTAssertEqual(
            rules.key("https://cdn.test/v.mp4?sigA=1&session=2"), "https://cdn.test/v.mp4?session=2",
            "*.host matches the host itself")
        XCTAssertEqual(rules.key("https://other.test/v.mp4?sigA=1&session=2"), "https://other.test/v.mp4?sigA=1")
        XCTAssertTrue(HostPattern.matches("media.test:8080", host: "media.test:8080"))
        XCTAssertFalse(HostPattern.matches("media.test:8080", host: "media.test:9090"))
        XCTAssertTrue(
            HostPattern.matches("media.test", host: "media.test:9090"), "a pattern without a port matches any port")
        XCTAssertFalse(HostPattern.matches("*.test", host: "attest"))
    }

    func testSignaturesKeepKeysApartWithoutBeingStored() {
        let rules = URLRules.standard
        let one = rules.key("https://cdn.test/v.mp4?Signature=aaa&n=1"),
            two = rules.key("https://cdn.test/v.mp4?Signature=bbb&n=1")
        XCTAssertNotEqual(one, two, "without a key rule, two signatures are two entries")
        XCTAssertFalse(one.contains("aaa"))
        // FIPS 180-4's example: SHA-256("abc").
        XCTAssertEqual(
            rules.key("https://cdn.test/v?sig=abc"),
            "https://cdn.test/v?sig=sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testHostOfAURL() {
        XCTAssertEqual(URLText.host(of: "https://u:p@Media.Test:8443/x?y"), "media.test:8443")
        XCTAssertEqual(URLText.host(of: "http://[::1]:80/x"), "[::1]:80")
        XCTAssertNil(URLText.host(of: "/local/path.mp4"))
    }
}
