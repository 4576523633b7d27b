/// One file of the dashboard (`GET /` and `/dashboard/NAME`). SwiftPM embeds the folder
/// `Sources/Serving/Dashboard` in the binary as bytes (`PackageResources`), so the page works
/// wherever the binary is copied and nothing is read from disk at run time.
struct DashboardAsset {
    let bytes: [UInt8]
    let contentType: String

    /// The asset `parts` (a path split at `/`) names; nil for any other path.
    init?(path parts: [String]) {
        switch parts {
        case []: (bytes, contentType) = (PackageResources.index_html, "text/html; charset=utf-8")
        case ["dashboard", "app.js"]: (bytes, contentType) = (PackageResources.app_js, "text/javascript; charset=utf-8")
        case ["dashboard", "app.css"]: (bytes, contentType) = (PackageResources.app_css, "text/css; charset=utf-8")
        case ["dashboard", "icon.svg"]: (bytes, contentType) = (PackageResources.icon_svg, "image/svg+xml")
        default: return nil
        }
    }

    /// The API's OpenAPI 3.1 description (`docs/openapi.json`), for generating clients.
    static let openAPI = DashboardAsset(bytes: PackageResources.openapi_json, contentType: "application/json")

    private init(bytes: [UInt8], contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
    }

    /// The page loads its own script, style, images, media and API calls and nothing else: no
    /// other origin, no inline script or style, no plugins, no framing, forms post only here.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "media-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    var response: HTTPResponse {
        // no-cache: a browser asks again (cheaply) after an upgrade instead of running an old page.
        // no-referrer: media and image URLs may carry ?token=, which must not travel in a Referer.
        HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", contentType),
                ("Content-Security-Policy", DashboardAsset.contentSecurityPolicy),
                ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
                ("Referrer-Policy", "no-referrer"),
            ],
            body: .bytes(bytes))
    }
}
