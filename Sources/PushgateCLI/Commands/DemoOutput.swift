import Foundation
import PNSSandbox
import Pushgate

/// The demo's 80-column output.
final class DemoOutput: Sendable {
    /// Writes `text` and a line break to standard output at once: also into a pipe or a file
    /// (`| tee`), where `print` is block-buffered and a demo left running would show nothing
    /// until it ends.
    static func write(_ text: String = "") {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    func heading(_ text: String) { Self.write("\n== \(text)") }

    func line(_ text: String) { Self.write(text) }

    func failure(_ step: String, _ reason: String) {
        FileHandle.standardError.write(Data("\nFAILED at step \"\(step)\": \(reason)\n".utf8))
    }

    func table(_ result: NotificationResult) {
        guard !result.targets.isEmpty else {
            // The sender may not see another account's devices: what happened, per platform.
            Self.write("platform  outcomes")
            for summary in result.platforms {
                let outcomes = summary.sortedCounts.map { "\($0.outcome.rawValue) \($0.count)" }.joined(separator: ", ")
                Self.write("\(summary.platform.serviceName.padding(toLength: 9, withPad: " ", startingAt: 0)) \(outcomes)")
            }
            Self.write("state \(result.state): \(result.successCount) delivered, \(result.failureCount) failed")
            Self.write("(counted, not listed: the devices are another account's)")
            return
        }
        Self.write("platform  outcome          status  attempts  ms   service message id")
        for target in result.targets.sorted(by: { $0.platform < $1.platform }) {
            let platform = target.platform.serviceName.padding(toLength: 9, withPad: " ", startingAt: 0)
            let outcome = target.outcome.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0)
            let status = String(target.statusCode ?? 0).padding(toLength: 7, withPad: " ", startingAt: 0)
            let attempts = String(target.attempts).padding(toLength: 9, withPad: " ", startingAt: 0)
            let milliseconds = String(Int(target.latencyMilliseconds)).padding(toLength: 4, withPad: " ", startingAt: 0)
            Self.write("\(platform) \(outcome) \(status) \(attempts) \(milliseconds) \(Self.clip(target.serviceMessageID ?? "-", 24))")
        }
        Self.write("state \(result.state): \(result.successCount) delivered, \(result.failureCount) failed")
    }

    /// What a device received: the payload itself (FCM and GCM without the request envelope),
    /// wrapped to 80 columns.
    func received(_ platform: Platform, _ notification: ReceivedNotification) {
        let type =
            notification.header("x-wns-type") ?? notification.header("apns-push-type")
            ?? (platform == .browser ? "decrypted by the browser" : platform == .unifiedpush ? "decrypted by the app" : "data message")
        Self.write("\(platform.serviceName) (\(type)):")
        for line in Self.wrap(Self.payload(platform, notification.payload), width: 76) { Self.write("    \(line)") }
    }

    static func payload(_ platform: Platform, _ text: String) -> String {
        guard platform == .fcm || platform == .gcm, let json = try? JSONParser.parse(text) else { return text }
        // FCM v1's envelope (also a gcm message delivered through v1), or the legacy one.
        let data = json["message"]?["data"] ?? json["data"]
        guard let data, let template = try? Template(json: data), let rendered = try? template.renderString([:]) else { return text }
        return #"{"data":\#(rendered)}"#
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var rest = Substring(text)
        while rest.count > width {
            lines.append(String(rest.prefix(width)))
            rest = rest.dropFirst(width)
        }
        lines.append(String(rest))
        return lines
    }

    static func clip(_ text: String, _ length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length - 1)) + "…"
    }
}
