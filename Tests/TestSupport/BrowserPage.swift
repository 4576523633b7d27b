import Foundation

/// One tab of a `Browser`, driven as a person would: load a URL, click and type with real input
/// events, point at things; and read the page (JavaScript expressions), screenshots and what
/// went wrong in it (exceptions, console errors, security messages).
public final class BrowserPage {
    private let browser: Browser
    private let session: String

    init(browser: Browser, session: String) {
        self.browser = browser
        self.session = session
    }

    @discardableResult
    func call(_ method: String, _ params: [String: Any] = [:], timeout: Double = 30) throws -> [String: Any] {
        try browser.call(method, params, session: session, timeout: timeout)
    }

    /// This page's events so far.
    public var events: [Browser.Event] { browser.events.filter { $0.session == session } }

    /// Loads `url` and waits for its load event.
    public func navigate(_ url: String) throws {
        let result = try call("Page.navigate", ["url": url])
        if let error = result["errorText"] as? String { throw Browser.failure("loading \(url): \(error)") }
        try wait(for: "document.readyState === 'complete'")
    }

    /// The value of a JavaScript expression (promises awaited); a thrown exception is an error.
    @discardableResult
    public func evaluate(_ expression: String) throws -> Any? {
        let result = try call(
            "Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true])
        if let details = result["exceptionDetails"] as? [String: Any] {
            let exception = (details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? details
            throw Browser.failure("evaluating \(expression): \(exception)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Evaluates `expression` until it is neither null, undefined nor false, and returns it.
    @discardableResult
    public func wait(for expression: String, timeout: Double = 20) throws -> Any {
        let deadline = Date().addingTimeInterval(timeout)
        var last: Any?
        while Date() < deadline {
            last = try evaluate(expression)
            if let value = last, !(value is NSNull), (value as? Bool) != false { return value }
            usleep(100_000)
        }
        throw TestSupportError.timedOut(
            command: "waiting in the page for \(expression) (last: \(String(describing: last)))",
            seconds: timeout, stderr: problems.joined(separator: "\n"))
    }

    /// The middle of the element `selector` names, in viewport coordinates, scrolled into view;
    /// waits (up to 10 s) until there is one that takes up room on the page.
    public func center(of selector: String) throws -> (x: Double, y: Double) {
        let quoted = try BrowserPage.quote(selector)
        let value = try wait(
            for: """
                (() => { const e = document.querySelector(\(quoted)); if (!e) return null;
                         e.scrollIntoView({block: 'center', inline: 'center'}); const r = e.getBoundingClientRect();
                         return r.width > 0 && r.height > 0 ? [r.left + r.width / 2, r.top + r.height / 2] : null; })()
                """, timeout: 10)
        guard let point = value as? [Double], point.count == 2 else {
            throw Browser.failure("no element \(selector) to point at")
        }
        return (point[0], point[1])
    }

    /// Moves the mouse to (x, y), as a pointer would.
    public func moveMouse(x: Double, y: Double) throws {
        try call("Input.dispatchMouseEvent", ["type": "mouseMoved", "x": x, "y": y])
    }

    /// A real click (move, press, release) in the middle of `selector`.
    public func click(_ selector: String) throws {
        let (x, y) = try center(of: selector)
        try moveMouse(x: x, y: y)
        for type in ["mousePressed", "mouseReleased"] {
            try call("Input.dispatchMouseEvent", ["type": type, "x": x, "y": y, "button": "left", "clickCount": 1])
        }
    }

    /// Focuses `selector` and types `text` into it.
    public func type(_ text: String, into selector: String) throws {
        try click(selector)
        try call("Input.insertText", ["text": text])
    }

    /// Presses and releases a key: "ArrowRight", "ArrowLeft", "Enter", "Tab"...
    public func press(_ key: String) throws {
        let codes = [
            "ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, "Enter": 13, "Tab": 9, "Home": 36,
            "End": 35,
        ]
        var down: [String: Any] = [
            "type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": codes[key] ?? 0,
        ]
        if key == "Enter" { down["text"] = "\r" }
        try call("Input.dispatchKeyEvent", down)
        try call(
            "Input.dispatchKeyEvent",
            ["type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": codes[key] ?? 0])
    }

    /// The viewport, in CSS pixels; narrow ones (a phone) are emulated as mobile.
    public func setViewport(width: Int, height: Int) throws {
        try call(
            "Emulation.setDeviceMetricsOverride",
            [
                "width": width, "height": height, "deviceScaleFactor": 1,
                "mobile": width < 600,
            ])
    }

    /// A PNG of the whole page (not only the viewport) written to `path`.
    public func screenshot(to path: String) throws {
        let size =
            try evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]") as? [Double]
            ?? [1280, 900]
        let shot = try call(
            "Page.captureScreenshot",
            [
                "format": "png", "captureBeyondViewport": true,
                "clip": ["x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1],
            ])
        guard let base64 = shot["data"] as? String, let data = Data(base64Encoded: base64) else {
            throw Browser.failure("Page.captureScreenshot returned no image")
        }
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Uncaught exceptions, `console.error` calls and security messages (Content-Security-Policy
    /// violations among them) the page produced.
    public var problems: [String] {
        events.compactMap { event in
            switch event.method {
            case "Runtime.exceptionThrown":
                let details = event.params["exceptionDetails"] as? [String: Any]
                return
                    "exception: \((details?["exception"] as? [String: Any])?["description"] ?? details?["text"] ?? "")"
            case "Runtime.consoleAPICalled" where event.params["type"] as? String == "error":
                return "console.error: \(event.params["args"] ?? "")"
            case "Log.entryAdded":
                let entry = event.params["entry"] as? [String: Any] ?? [:]
                guard
                    entry["source"] as? String == "security"
                        || entry["level"] as? String == "error" && entry["source"] as? String != "network"
                else { return nil }
                return "\(entry["source"] ?? ""): \(entry["text"] ?? "")"
            default:
                return nil
            }
        }
    }

    /// Every URL the page requested (documents, scripts, images, media, fetches).
    public var requestedURLs: [String] {
        events.filter { $0.method == "Network.requestWillBeSent" }
            .compactMap { ($0.params["request"] as? [String: Any])?["url"] as? String }
    }

    /// `text` as a JavaScript string literal.
    public static func quote(_ text: String) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast()
            .description
    }
}
