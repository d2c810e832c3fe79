import Foundation
import Pushgate
import PushgateDispatch

extension Sends {
    // MARK: Dry runs

    /// What a send would do, found without doing it (`dryRun=true`): nothing is stored, sent or
    /// pruned.
    public struct DryRun: Sendable, Encodable {
        /// How many registrations the send reaches: in all (nil for an FCM topic or condition,
        /// whose devices Firebase knows), and per platform.
        public struct AudienceSize: Sendable, Encodable {
            public var total: Int?
            public var byPlatform: [String: Int]
        }
        /// A matched registration, its handle masked.
        public struct Match: Sendable, Encodable {
            public var registrationId: String
            public var platform: String
            public var handle: String
            public var tags: [String]
        }
        /// One rendered payload (one per platform and template) as it would go on the wire to the
        /// first matched device, built by the provider's own code: the credential stands as
        /// `<credential>` and the device's handle is masked in the URL and body. `bytes` is the
        /// payload's size as the service measures it, against the service's `limit`.
        public struct Payload: Sendable, Encodable {
            public var platform: String
            public var template: String
            public var targets: Int?
            public var method: String?
            public var url: String?
            public var headers: [String: String]
            public var body: String
            public var bytes: Int
            public var limit: Int
            public var withinLimit: Bool
            /// What the preview cannot show (Web Push encrypts per subscription; a platform with
            /// no registration or no configured service has no request line).
            public var note: String?
        }

        public var dryRun = true
        public var audience: AudienceSize
        public var registrations: [Match]
        public var payloads: [Payload]

        /// The largest sample of matched registrations a dry run lists.
        public static let maximumSample = 100
        /// Targets per page when a dry run counts its audience.
        static let countPage = 10_000

        /// Headers by name; a repeated name's values joined with commas.
        static func headerMap(_ headers: [HTTPHeader]) -> [String: String] {
            Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { "\($0), \($1)" })
        }
    }

    /// A dry run of a send: validated and rendered as the send would be (a secure send with a
    /// placeholder id, and no message stored), its audience walked and counted, its first
    /// `sample` registrations listed, and each payload built into the request its service would
    /// get. Refused as the send itself would be.
    func dryRun(_ command: SendCommand, user: AuthenticatedUser, sample: Int) async throws(GatewayError) -> DryRun {
        guard (1...DryRun.maximumSample).contains(sample) else {
            throw .badRequest("sample must be 1…\(DryRun.maximumSample), not \(sample)")
        }
        guard case .message(let body, let secure) = command.content else { throw .badRequest("a dry run is the tutorial API's") }
        let purpose = secure ? "secure" : "notify"
        let audience = try audience(of: command, platform: nil)
        // The send's own checks and rendering (a secure one with a placeholder id); no message stored.
        let prepared =
            secure
            ? try securePayloads(command, body: body, audience: audience, user: user, id: "00000000-0000-0000-0000-000000000000")
            : try renderMessage(command, body: body, audience: audience, user: user, purpose: purpose)

        var counts: [Platform: Int] = [:]
        var matches: [DryRun.Match] = []
        var firstTargets: [Platform: DispatchTarget] = [:]
        var total: Int? = 0
        if prepared.audience.targetKind == .registration {
            let expression = prepared.audience.expression
            let at = now()
            do {
                // The first `sample` registrations in full (one page)…
                for try await batch in store.registrations(
                    matching: expression, platforms: prepared.selection, app: appID, batchSize: sample, now: at)
                {
                    // Another account's registrations are counted, not listed.
                    matches = batch.filter(user.mayInspect).map {
                        DryRun.Match(
                            registrationId: $0.id.rawValue, platform: $0.platform.rawValue, handle: $0.handle.masked,
                            tags: $0.tags.map(\.rawValue))
                    }
                    break
                }
                // …then the audience counted on the send's own path: ids and handles, a large page
                // at a time, no row read in full.
                for try await page in store.deliveryTargets(
                    matching: expression, platforms: prepared.selection, app: appID, pageSize: DryRun.countPage, now: at)
                {
                    for target in page {
                        let platform = target.handle.platform
                        counts[platform, default: 0] += 1
                        if firstTargets[platform] == nil { firstTargets[platform] = target }
                    }
                }
            } catch {
                throw GatewayError(.unavailable, "the registration store is unavailable")
            }
            total = counts.values.reduce(0, +)
        } else {
            total = nil
            for target in prepared.audience.targets(after: nil, limit: 1, registrations: { _, _, _ in [] }) {
                firstTargets[target.handle.platform] = target
            }
        }

        let disclosed = user.mayInspectDevices(ofAudience: prepared.audience.description)
        let payloads = prepared.payloads.sorted { $0.key < $1.key }.map { platform, payload in
            self.preview(
                payload, on: platform, template: purpose, to: firstTargets[platform], targets: total == nil ? nil : counts[platform] ?? 0,
                disclosed: disclosed)
        }
        return DryRun(
            audience: DryRun.AudienceSize(
                total: total, byPlatform: Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) })),
            registrations: matches, payloads: payloads)
    }

    /// One payload as it would go to `target`, credential and handle hidden.
    private func preview(
        _ payload: RenderedNotification, on platform: Platform, template: String, to target: DispatchTarget?, targets: Int?,
        disclosed: Bool
    ) -> DryRun.Payload {
        let pushType = payload.headers.first { $0.name.lowercased() == "apns-push-type" }?.value
        let limit = PayloadLimit.maximumBytes(for: platform, apnsPushType: pushType)
        var result = DryRun.Payload(
            platform: platform.rawValue, template: template, targets: targets, method: nil, url: nil,
            headers: DryRun.headerMap(payload.headers), body: String(decoding: payload.body, as: UTF8.self), bytes: payload.body.count,
            limit: limit, withinLimit: payload.body.count <= limit)
        guard let target else {
            result.note = "no registration matched on \(platform.serviceName): the payload and the template's headers only"
            return result
        }
        guard let request = dispatcher.preview(payload, on: platform, to: target) else {
            result.note = "\(platform.serviceName) is not configured: the payload and the template's headers only"
            return result
        }
        // The device's handle (a Web Push subscription's endpoint) hidden wherever it appears.
        let secret =
            platform.isWebPush
            ? WebPushSubscription(handleValue: target.handle.value)?.endpoint ?? target.handle.value : target.handle.value
        // Another account's device is not shown even masked.
        let masked = disclosed ? target.handle.masked : "<device>"
        func hide(_ text: String) -> String { secret == masked ? text : text.replacingOccurrences(of: secret, with: masked) }
        result.method = request.method
        result.url = hide(request.url)
        result.headers = DryRun.headerMap(request.headers)
        result.body = hide(String(decoding: request.body, as: UTF8.self))
        if platform.isWebPush {
            result.note = "the body is the plaintext: it is encrypted for each subscription (aes128gcm, RFC 8291) as it is sent"
        }
        return result
    }
}
