import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// the browser reads JSON commands on fd 3 and writes answers and events on fd 4, each message
/// ended by a NUL byte). No WebDriver, no Node: the browser and this file.
final class HeadlessChromium: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The browser executable: `$PUSHGATE_CHROMIUM`, else `chromium` or `google-chrome` on the PATH.
    static var executable: String? {
        if let path = ProcessInfo.processInfo.environment["PUSHGATE_CHROMIUM"], !path.isEmpty { return path }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return "\(directory)/\(name)"
            }
        }
        return nil
    }

    private let pid: pid_t
    private let commands: Int32
    private let answers: Int32
    private let profile: String
    private let pending = PendingReplies()
    private let nextID = Atomic<Int>(1)
    private let reader: Thread
    private var session: String?

    /// Starts the browser with a fresh profile and attaches to its first page.
    static func launch(width: Int = 1200, height: Int = 1500) async throws -> HeadlessChromium {
        guard let executable else { throw Failure(description: "no Chromium found (install Debian's chromium, or set PUSHGATE_CHROMIUM)") }
        let browser = try HeadlessChromium(executable: executable, width: width, height: height)
        try await browser.attach()
        return browser
    }

    private init(executable: String, width: Int, height: Int) throws {
        profile = NSTemporaryDirectory() + "pushgate-chromium-" + UUID().uuidString.prefix(8)
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else { throw Failure(description: "pipe() failed") }
        let arguments = [
            executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe",
            "--user-data-dir=\(profile)", "--window-size=\(width),\(height)", "about:blank",
        ]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
        let devNull = open("/dev/null", O_WRONLY)
        posix_spawn_file_actions_adddup2(&actions, devNull, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, nil, &argv, environ)
        Glibc.close(devNull)
        Glibc.close(toBrowser[0])
        Glibc.close(fromBrowser[1])
        guard status == 0 else {
            Glibc.close(toBrowser[1])
            Glibc.close(fromBrowser[0])
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
        commands = toBrowser[1]
        answers = fromBrowser[0]
        let pending = self.pending
        let answers = self.answers
        reader = Thread {
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(answers, &chunk, chunk.count)
                if count <= 0 { break }
                buffer.append(contentsOf: chunk[0..<count])
                while let end = buffer.firstIndex(of: 0) {
                    let message = Array(buffer[..<end])
                    buffer.removeSubrange(...end)
                    guard let object = try? JSONSerialization.jsonObject(with: Data(message)) as? [String: Any],
                        let id = object["id"] as? Int
                    else { continue }
                    pending.state.withLock { $0.removeValue(forKey: id) }?.resume(returning: Data(message))
                }
            }
            let orphans = pending.state.withLock { state in
                defer { state.removeAll() }
                return Array(state.values)
            }
            for continuation in orphans { continuation.resume(throwing: Failure(description: "the browser closed its DevTools pipe")) }
        }
        reader.start()
    }

    /// Sends a DevTools command (to the attached page unless `browserLevel`) and returns its result.
    @discardableResult
    func send(_ method: String, _ parameters: [String: Any] = [:], browserLevel: Bool = false) async throws -> [String: Any] {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if !browserLevel, let session { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        let answer = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            pending.state.withLock { $0[id] = continuation }
            let written = bytes.withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            if written != bytes.count, let continuation = pending.state.withLock({ $0.removeValue(forKey: id) }) {
                continuation.resume(throwing: Failure(description: "cannot write to the browser's DevTools pipe"))
            }
        }
        let object = try JSONSerialization.jsonObject(with: answer) as? [String: Any] ?? [:]
        if let error = object["error"] as? [String: Any] {
            throw Failure(description: "DevTools \(method): \(error["message"] ?? error)")
        }
        return object["result"] as? [String: Any] ?? [:]
    }

    private func attach() async throws {
        let targets = try await send("Target.getTargets", browserLevel: true)
        guard let infos = targets["targetInfos"] as? [[String: Any]], let page = infos.first(where: { $0["type"] as? String == "page" }),
            let targetID = page["targetId"] as? String
        else { throw Failure(description: "the browser has no page target") }
        let attached = try await send("Target.attachToTarget", ["targetId": targetID, "flatten": true], browserLevel: true)
        session = attached["sessionId"] as? String
        try await send("Page.enable")
        try await send("Runtime.enable")
    }

    func navigate(_ url: String) async throws {
        try await send("Page.navigate", ["url": url])
        try await waitFor("document.readyState === 'complete' && location.href === \(Self.literal(url))", what: "page load of \(url)")
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its JSON value.
    @discardableResult
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await send("Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let detail = (exception["exception"] as? [String: Any])?["description"] ?? exception["text"] ?? "exception"
            throw Failure(description: "JavaScript failed: \(detail) in: \(expression)")
        }
        let value = (result["result"] as? [String: Any])?["value"]
        return value is NSNull ? nil : value
    }

    /// Polls `condition` (a JavaScript expression) until it is true; fails after `seconds`, saying
    /// what it waited for.
    func waitFor(_ condition: String, what: String, seconds: Double = 20) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        var lastError: (any Error)?
        while Date() < deadline {
            do {
                if try await evaluate("Boolean(\(condition))") as? Bool == true { return }
            } catch {
                lastError = error  // the page may be between documents (navigation, reload)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "timed out after \(seconds) s waiting for \(what)" + (lastError.map { " (last error: \($0))" } ?? ""))
    }

    /// The text of the element with `id`.
    func text(of id: String) async throws -> String {
        try await evaluate("document.getElementById(\(Self.literal(id))).textContent") as? String ?? ""
    }

    /// Types `value` into the input with `id` as a user would (an input event follows).
    func fill(_ id: String, _ value: String) async throws {
        try await evaluate(
            "(() => { const e = document.getElementById(\(Self.literal(id))); e.focus(); e.value = \(Self.literal(value)); "
                + "e.dispatchEvent(new Event('input', {bubbles: true})); })()")
    }

    func click(_ id: String) async throws {
        try await evaluate("document.getElementById(\(Self.literal(id))).click()")
    }

    /// A full-page PNG of the current page.
    func screenshot() async throws -> Data {
        let result = try await send("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": true])
        guard let base64 = result["data"] as? String, let data = Data(base64Encoded: base64) else {
            throw Failure(description: "no screenshot data")
        }
        return data
    }

    /// Closes the browser and removes its profile.
    func close() async {
        _ = try? await send("Browser.close", browserLevel: true)
        var status: Int32 = 0
        for _ in 0..<50 {
            if waitpid(pid, &status, WNOHANG) == pid { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        if waitpid(pid, &status, WNOHANG) == 0 {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
        Glibc.close(commands)
        Glibc.close(answers)
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// `value` as a JavaScript string literal.
    static func literal(_ value: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [value])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}

/// Continuations waiting for the browser's answers, by command id.
private final class PendingReplies: Sendable {
    let state = Mutex<[Int: CheckedContinuation<Data, any Error>]>([:])
}
