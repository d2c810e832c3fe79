import Crypto
import Foundation

/// The web console served at `/console`: one static page (HTML, CSS and script, no build step)
/// over the gateway's own authenticated API, modelled on the Notification Hubs tutorial app. It
/// signs in with Basic credentials (kept in the tab's session storage), lists the user's
/// registrations, registers sandbox devices the way the tutorial client does, sends with platform
/// switches, shows progress and the per-platform and per-device results, with a sandbox what
/// each device received, and the user's Live Activities (one's content state, channel and masked
/// devices). Every value from the server is inserted as text, never as markup.
enum ConsolePage {
    /// The page's `Content-Security-Policy`: its own origin only, and only its own script (by
    /// hash), so that injected markup could not run code.
    static let contentSecurityPolicy: String = {
        let start = html.range(of: "<script>")!.upperBound
        let end = html.range(of: "</script>")!.lowerBound
        let digest = SHA256.hash(data: Data(html[start..<end].utf8))
        return "default-src 'self'; script-src 'sha256-\(Data(digest).base64EncodedString())'; style-src 'unsafe-inline'; "
            + "img-src data:; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
    }()

    /// The page, `console.html` beside this file, embedded in the binary at build time (no
    /// resource bundle to ship next to it).
    static let html = String(decoding: PackageResources.console_html, as: UTF8.self)
}
