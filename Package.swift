// swift-tools-version:6.0
import PackageDescription

// Layers point one way (docs/architecture.md draws them): mprobe (CLI), Serving → Reports → MediaKit (the jobs)
// → Containers and FFmpeg → ByteSources → Caching, RangeFetch → Support and the C modules. Caching knows
// nothing of HTTP or FFmpeg; RangeFetch knows nothing of caching; only FFmpeg sees FFmpeg's C structs.
let package = Package(
    name: "mprobe",
    products: [
        .executable(name: "mprobe", targets: ["mprobe"]),
        .library(name: "MediaKit", targets: ["MediaKit"]),
    ],
    targets: [
        // FFmpeg's headers (Debian: libavformat-dev libavcodec-dev libavutil-dev libswscale-dev) and
        // a loader that opens its libraries on first use: mprobe is deliberately not linked against
        // them, so commands that never demux start ~25 ms faster (CFFmpeg.h says more).
        .target(name: "CFFmpeg", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // epoll, eventfd, sendfile and accept4 for the HTTP server's event loops.
        .target(name: "CSockets"),
        // libpq's header (Debian: libpq-dev) and a loader that opens it on first use, as for FFmpeg:
        // only `serve --jobs postgres://` needs PostgreSQL's client library installed.
        .target(name: "CPostgres", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // URL text as shown and stored: credentials redacted, cache keys without userinfo.
        .target(name: "URLSupport"),
        // Cancellation, the blocking lock and saturating arithmetic: what every layer shares.
        .target(name: "Support"),
        .target(name: "Caching", dependencies: ["CSQLite", "Support", "URLSupport"]),
        .target(name: "RangeFetch", dependencies: ["CCurl", "Support", "URLSupport"]),
        .target(name: "ByteSources", dependencies: ["Caching", "RangeFetch", "Support", "URLSupport"]),
        // FFmpeg's owner types: the only module that sees its C structs and calls its functions.
        .target(name: "FFmpeg", dependencies: ["CFFmpeg", "ByteSources", "Caching", "RangeFetch", "Support"]),
        // What each container's bytes say (ISO-BMFF, Matroska, MPEG audio, MPEG-TS, HLS and DASH),
        // read over a MediaSource: no FFmpeg here, the parsers return values.
        .target(name: "Containers", dependencies: ["ByteSources", "Caching", "RangeFetch", "Support"]),
        // The jobs: probe, prefetch, check, thumbnails and streams, over Containers and FFmpeg.
        .target(
            name: "MediaKit",
            dependencies: ["Containers", "FFmpeg", "ByteSources", "Caching", "RangeFetch", "Support"]),
        // The objects the CLI and the service both emit (JSON), and thumbnail sets written to disk.
        .target(name: "Reports", dependencies: ["MediaKit", "FFmpeg", "ByteSources", "Caching"]),
        // `mprobe serve`: HTTP API, persistent jobs and the caching range proxy (an epoll HTTP/1.1 server of its own).
        // The dashboard's HTML, CSS and JavaScript are compiled into the binary (PackageResources),
        // so `mprobe serve` shows it wherever the binary is copied.
        .target(
            name: "Serving",
            dependencies: [
                "Reports", "MediaKit", "Containers", "FFmpeg", "ByteSources", "Caching", "RangeFetch",
                "Support", "URLSupport", "CSockets", "CSQLite", "CPostgres",
            ],
            resources: [.embedInCode("Dashboard"), .embedInCode("API/openapi.json")]),
        .executableTarget(
            name: "mprobe",
            dependencies: [
                "Serving", "Reports", "MediaKit", "FFmpeg", "ByteSources", "Caching", "RangeFetch", "Support",
                "URLSupport",
            ]),

        // Real servers for tests: nginx launcher, the project's fault-injecting HTTP server, TLS material.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "CachingTests", dependencies: ["Caching", "TestSupport", "URLSupport"]),
        .testTarget(name: "URLSupportTests", dependencies: ["URLSupport"]),
        .testTarget(name: "RangeFetchTests", dependencies: ["RangeFetch", "Support", "TestSupport"]),
        .testTarget(name: "ByteSourcesTests", dependencies: ["ByteSources", "TestSupport"]),
        // The fast tier: each container's parsers over bytes in memory (seconds, no server, no FFmpeg).
        .testTarget(name: "ContainersTests", dependencies: ["Containers", "ByteSources", "RangeFetch"]),
        .testTarget(
            name: "MediaKitTests", dependencies: ["MediaKit", "Containers", "FFmpeg", "ByteSources", "Caching", "TestSupport"]),
        .testTarget(
            name: "ReportsTests", dependencies: ["Reports", "MediaKit", "FFmpeg", "ByteSources", "TestSupport"]),
        .testTarget(name: "ServingTests", dependencies: ["Serving", "Caching", "TestSupport"]),
        // The CLI's parser over argument lists in memory (fast tier, no binary run).
        .testTarget(name: "ArgumentsTests", dependencies: ["mprobe"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport", "Caching"]),
    ],
    swiftLanguageModes: [.v6]
)
