import XCTest

@testable import mprobe

/// The command-line parser over argument lists in memory, against a command's table: every form
/// an option can take, and the mistakes a user makes, each a usage error that names it.
final class ArgumentsTests: XCTestCase {
    private let table: [Option] = [
        Option("jobs", short: "j", .value("N"), "inputs at once"),
        Option("i", .value("FILE"), "inputs from FILE"),
        Option("fast", "header only"),
        Option("sprite", .optionalValue("CxR", pattern: "^[0-9]+[xX][0-9]+$"), "sheets"),
        Option("header-for", .pair("HOST", "'N: V'"), "a header for one host"),
        Option("help", short: "h", "this help"),
    ]

    func testEveryFormIsRead() throws {
        let args = try Arguments(
            [
                "a.mp4", "-j", "3", "--fast", "--sprite", "5x4", "-i=list.txt", "--header-for", "x.com", "A: b",
                "--header-for", "y.com", "C: d", "--jobs=4", "--", "--not-an-option",
            ],
            options: table)
        XCTAssertEqual(args.positionals, ["a.mp4", "--not-an-option"])
        XCTAssertEqual(args.value("jobs"), "4", "the last value wins")
        XCTAssertEqual(args.allValues("jobs"), ["3", "4"])
        XCTAssertEqual(args.value("i"), "list.txt")
        XCTAssertTrue(args.flag("fast"))
        XCTAssertEqual(args.value("sprite"), "5x4")
        XCTAssertEqual(args.allPairs("header-for").map { "\($0.0)=\($0.1)" }, ["x.com=A: b", "y.com=C: d"])
        XCTAssertEqual(try args.integer("jobs"), 4)
    }

    func testAnOptionalValueIsTakenOnlyWhenItLooksLikeOne() throws {
        let bare = try Arguments(["--sprite", "movie.mp4"], options: table)
        XCTAssertTrue(bare.flag("sprite"))
        XCTAssertNil(bare.value("sprite"))
        XCTAssertEqual(bare.positionals, ["movie.mp4"])
        XCTAssertEqual(try Arguments(["--sprite=3x3"], options: table).value("sprite"), "3x3")
    }

    func testMistakesAreUsageErrorsThatNameThem() {
        let cases: [([String], String)] = [
            (["--nope"], "unknown option --nope"),
            (["-x"], "unknown option -x"),
            (["-v"], "unknown option -v"),  // an alias other commands have is not this one's
            (["--jobs"], "--jobs needs a value"),
            (["--fast=yes"], "--fast takes no value"),
            (["--header-for", "x.com"], "--header-for needs two values"),
            (["--header-for=x.com", "A: b"], "--header-for needs two values"),
        ]
        for (argv, expected) in cases {
            XCTAssertThrowsError(try Arguments(argv, options: table), "\(argv)") { error in
                XCTAssertTrue("\(error)".contains(expected), "\(argv): \(error)")
            }
        }
        XCTAssertThrowsError(try Arguments(["-j", "many"], options: table).integer("jobs")) { error in
            XCTAssertTrue("\(error)".contains("needs a whole number"), "\(error)")
        }
    }

    func testNumbersAndSizesAreReadStrictly() {
        let decimals: [(String, Double?)] = [
            ("12", 12), ("0.5", 0.5), (".5", 0.5), ("0x10", nil), ("1e3", nil), ("inf", nil),
            ("nan", nil), ("-1", nil), (".", nil), ("", nil), ("1.2.3", nil),
        ]
        for (text, expected) in decimals { XCTAssertEqual(parseDecimal(text), expected, text) }
        let sizes: [(String, Int64?)] = [
            ("500M", 500 << 20), ("10G", 10 << 30), ("2GiB", 2 << 30), ("1048576", 1 << 20),
            (" 1k ", 1 << 10), ("-5M", nil), ("lots", nil), ("99999999T", nil),
        ]
        for (text, expected) in sizes { XCTAssertEqual(parseByteSize(text), expected, text) }
    }
}
