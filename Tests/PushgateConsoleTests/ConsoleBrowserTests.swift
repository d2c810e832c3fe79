import Foundation
import Pushgate
import PushgateLocal
import Testing

/// Whether a browser test may be skipped: not when `PUSHGATE_REQUIRE_BROWSER=1` (the README's test
/// command sets it, after installing Chromium).
private let browserAvailable =
    HeadlessChromium.executable != nil || ProcessInfo.processInfo.environment["PUSHGATE_REQUIRE_BROWSER"] == "1"

/// The web console in a real browser: headless Chromium against a local gateway and sandbox.
@Suite(.enabled(if: browserAvailable, "Chromium is not installed (apt-get install chromium)"), .serialized)
struct ConsoleBrowserTests {
    static let screenshotDirectory =
        ProcessInfo.processInfo.environment["PUSHGATE_SCREENSHOT_DIR"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        + "/.build/console-test"

    @Test func aUserRegistersDevicesAnotherSendsAndTheResultsAndInboxesAreShown() async throws {
        try await withConsole { gateway, browser in
            try await signIn(browser, "alice")

            // alice registers one sandbox device per platform, the way the tutorial client does.
            let names = Platform.allCases.map(\.rawValue)
            let count = names.count
            for (index, platform) in names.enumerated() {
                try await browser.evaluate("document.getElementById('sandbox-platform').value = '\(platform)'")
                try await browser.click("sandbox-register-button")
                try await browser.waitFor(
                    "document.querySelectorAll('#registrations tbody tr[data-registration]').length === \(index + 1)",
                    what: "registration \(index + 1) (\(platform)) in the list")
            }
            #expect(try await browser.text(of: "registrations-status").hasPrefix("Registered sandbox \(names.last!) device "))
            let stored = try await gateway.call("GET", "/api/registrations", user: "alice")
            #expect(stored.bodyText.components(separatedBy: "\"username:alice\"").count - 1 == count)

            // bob sends to alice on every platform and sees one delivery per platform.
            try await browser.click("signout")
            try await browser.waitFor("!document.getElementById('login').hidden", what: "the sign-in form after signing out")
            try await signIn(browser, "bob")
            try await browser.fill("send-to", "alice")
            try await browser.fill("send-message", "Hello from a <b>browser</b> & test")
            // First a preview: the audience and each platform's request, nothing sent.
            try await browser.click("preview-button")
            try await browser.waitFor("!document.getElementById('preview').hidden", what: "the preview")
            #expect(try await browser.text(of: "send-status") == "Preview ready: nothing was sent.")
            #expect(try await browser.text(of: "preview-audience").hasPrefix("Reaches \(count) registrations"))
            let previewed = try await browser.evaluate("[...document.querySelectorAll('#preview-payloads h4')].map(h => h.textContent)")
            #expect((previewed as? [String])?.count == count, "\(String(describing: previewed))")
            #expect(try await browser.evaluate("document.querySelectorAll('b').length") as? Int == 0)
            #expect(try await gateway.call("GET", "/api/notifications", user: "bob").bodyText == "[]")
            try await saveScreenshot(browser, "console-preview.png")
            try await browser.click("send-button")
            try await browser.waitFor("!document.getElementById('results').hidden", what: "the send results")
            #expect(try await browser.text(of: "send-status") == "\(count) delivered, 0 failed")
            let platformRows = try await browser.evaluate(
                "[...document.querySelectorAll('#platform-results tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
            let rows = try #require(platformRows as? [[String]])
            #expect(rows.map { $0[0] } == names)
            #expect(rows.allSatisfy { $0[1] == "1" && $0[2] == "1" && $0[3] == "Success 1" })
            // alice's devices are bob's to count, not to list.
            let listed = try await browser.evaluate("document.querySelectorAll('#device-results tbody tr[data-outcome]').length")
            #expect(listed as? Int == 0)
            #expect(
                try await browser.text(of: "omitted-targets").contains("\(count) devices of another account: counted above, not listed"))
            // The message is text, never markup.
            #expect(try await browser.evaluate("document.querySelectorAll('b').length") as? Int == 0)
            // bob has no registrations of his own.
            #expect(try await browser.text(of: "registrations-status") == "No registrations yet: register a sandbox device.")
            try await saveScreenshot(browser, "console-send.png")

            // The same in the background: the notifications table follows it to Completed, and its
            // telemetry shows the counts per platform.
            try await browser.evaluate("document.getElementById('send-async').checked = true")
            try await browser.fill("send-message", "Later, in the background")
            try await browser.click("send-button")
            try await browser.waitFor(
                "[...document.querySelectorAll('#notifications tbody tr')].filter(r => r.dataset.state === 'Completed').length === 2",
                what: "two completed notifications in the table")
            let accepted = try await browser.text(of: "send-status")
            #expect(accepted.hasPrefix("Enqueued · ") || accepted.hasPrefix("Processing · "), "\(accepted)")
            try await browser.waitFor(
                "document.getElementById('details-id').textContent.endsWith('Completed')", what: "the background send's telemetry")
            let telemetry = try #require(
                try await browser.evaluate(
                    "[...document.querySelectorAll('#details-platforms tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
                    as? [[String]])
            #expect(telemetry.map { $0[0] } == names)
            #expect(telemetry.allSatisfy { $0[1] == "1" && $0[2] == "Success 1" }, "\(telemetry)")
            try await saveScreenshot(browser, "console-notifications.png")

            // alice sees what each of her devices received.
            try await browser.click("signout")
            try await browser.waitFor("!document.getElementById('login').hidden", what: "the sign-in form")
            try await signIn(browser, "alice")
            try await browser.waitFor(
                "document.querySelectorAll('#registrations .inbox').length === \(2 * count)",
                what: "two received notifications in each of \(count) inboxes")
            let inboxes = try #require(
                try await browser.evaluate("[...document.querySelectorAll('#registrations .inbox')].map(e => e.textContent)") as? [String])
            #expect(inboxes.count == 2 * count)
            #expect(
                inboxes.count { $0.contains("Hello from a <b>browser</b> & test") || $0.contains("&lt;b&gt;browser&lt;/b&gt;") } == count)
            #expect(inboxes.count { $0.contains("Later, in the background") } == count)

            try await saveScreenshot(browser, "console-inboxes.png")
        }
    }

    @Test func aWrongPasswordIsRefusedOnThePageWithoutABrowserDialog() async throws {
        try await withConsole { _, browser in
            try await browser.fill("login-user", "alice")
            try await browser.fill("login-password", "not-alice")
            try await browser.click("login-button")
            try await browser.waitFor("document.getElementById('login-status').textContent !== ''", what: "the sign-in error")
            #expect(try await browser.text(of: "login-status") == "Sign-in failed: wrong user name or password")
            #expect(try await browser.evaluate("document.getElementById('app').hidden") as? Bool == true)
            #expect(try await browser.evaluate("sessionStorage.getItem('pushgate.credentials')") == nil)
        }
    }

    @Test func anActivityIsListedAndItsDetailShowsItsContentStateAndMaskedDevices() async throws {
        try await withConsole { gateway, browser in
            let token = try await Self.startActivity(gateway, user: "alice", name: "order-4711")
            try await signIn(browser, "alice")
            try await browser.waitFor(
                "document.querySelectorAll('#activities tbody tr[data-activity]').length === 1", what: "alice's activity in the list")
            let cells = try #require(
                try await browser.evaluate("[...document.querySelector('#activities tbody tr').cells].map(c => c.textContent)") as? [String]
            )
            #expect(cells.count == 9 && cells[0...2] == ["order-4711", "alice", "update"] && cells[4...6] == ["2", "1", ""], "\(cells)")
            try await browser.evaluate("document.querySelector('#activities tbody tr[data-activity] button').click()")
            try await browser.waitFor("!document.getElementById('activity-details').hidden", what: "the activity's detail")
            #expect(try await browser.text(of: "activity-title") == "order-4711 · alice · running")
            #expect(try await browser.text(of: "activity-state") == "{\n  \"status\": \"<b>shipped</b>\"\n}")
            let devices = try #require(
                try await browser.evaluate("[...document.querySelectorAll('#activity-devices tbody td')].map(c => c.textContent)")
                    as? [String])
            #expect(devices.count == 1 && devices[0] != token && devices[0].hasPrefix(String(token.prefix(6))), "\(devices)")
            let kinds = try #require(
                try await browser.evaluate(
                    "[...document.querySelectorAll('#registrations tbody tr[data-registration]')].map(r => r.cells[1].textContent)")
                    as? [String])
            #expect(kinds.sorted() == ["apns · Live Activity order-4711", "apns · push-to-start DeliveryAttributes"], "\(kinds)")
            // The content state is text, never markup.
            #expect(try await browser.evaluate("document.querySelectorAll('b').length") as? Int == 0)
            try await saveScreenshot(browser, "console-live-activity.png")
        }
    }

    /// `user`'s phone started as activity `name` and updated once at priority 5, as the app and
    /// its backend would: its update token.
    private static func startActivity(_ gateway: LocalGateway, user: String, name: String) async throws -> String {
        let phone = await gateway.sandbox.createDevice(.apns)
        let activities = gateway.sandbox.state.liveActivities
        func register(_ token: String, _ kind: String) async throws {
            let id = String(decoding: try await gateway.call("POST", "/api/register", user: user).body, as: UTF8.self)
                .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            let put = try await gateway.call(
                "PUT", "/api/register/\(id)", user: user, body: #"{"Platform":"apns","Handle":"\#(token)",\#(kind)}"#)
            #expect(put.status == 200, "\(put.bodyText)")
        }
        try await register(
            activities.issuePushToStartToken(deviceID: phone.id, attributesType: "DeliveryAttributes"),
            #""Kind":"pushToStart","AttributesType":"DeliveryAttributes""#)
        let start = try await gateway.call(
            "POST", "/api/liveactivities/\(name)?event=start", user: user,
            body: #"{"attributes-type":"DeliveryAttributes","attributes":{},"content-state":{"status":"packed"},"input-push-token":1}"#)
        #expect(start.status == 200, "\(start.bodyText)")
        let token = try #require(activities.activities(deviceID: phone.id).first?.updateToken)
        try await register(token, #""Kind":"liveActivity","Activity":"\#(name)""#)
        let update = try await gateway.call(
            "POST", "/api/liveactivities/\(name)?event=update&priority=5", user: user,
            body: #"{"content-state":{"status":"<b>shipped</b>"}}"#)
        #expect(update.status == 200, "\(update.bodyText)")
        return token
    }

    /// A local gateway and sandbox, a browser on its console page; both always stopped.
    private func withConsole(_ body: (LocalGateway, HeadlessChromium) async throws -> Void) async throws {
        let gateway = try await LocalGateway.start()
        let browser: HeadlessChromium
        do { browser = try await HeadlessChromium.launch() } catch {
            await gateway.stop()
            throw error
        }
        do {
            try await browser.navigate(gateway.baseURL + "/console")
            try await body(gateway, browser)
        } catch {
            await browser.close()
            await gateway.stop()
            throw error
        }
        await browser.close()
        await gateway.stop()
    }

    /// Saves a PNG of the page into ``screenshotDirectory``.
    private func saveScreenshot(_ browser: HeadlessChromium, _ name: String) async throws {
        try FileManager.default.createDirectory(atPath: Self.screenshotDirectory, withIntermediateDirectories: true)
        let path = Self.screenshotDirectory + "/" + name
        let png = try await browser.screenshot()
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        try png.write(to: URL(fileURLWithPath: path))
        print("console screenshot: \(path)")
    }

    private func signIn(_ browser: HeadlessChromium, _ user: String) async throws {
        try await browser.fill("login-user", user)
        try await browser.fill("login-password", user)
        try await browser.click("login-button")
        try await browser.waitFor(
            "!document.getElementById('app').hidden && document.getElementById('registrations-status').textContent !== ''",
            what: "\(user) signed in with the registrations loaded")
        #expect(try await browser.text(of: "who") == "Signed in as \(user)")
    }
}
