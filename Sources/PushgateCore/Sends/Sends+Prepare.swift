import Foundation
import Logging
import Pushgate
import PushgateDispatch

extension Sends {
    /// What a send request asks for.
    public struct SendRequest: Sendable {
        public var pns: String?
        public var toTag: String?
        /// A tag expression instead of `to_tag` (`tags=` query parameter).
        public var tagExpression: String?
        /// The body: a JSON string (the message) or a JSON object of properties with `message`.
        public var body: [UInt8]
        /// `ttl=`: how long the services keep the notification for an offline device, in seconds
        /// from delivery (`deliverAt`, else now); nil leaves the templates' own settings.
        public var timeToLive: Int?
        /// When a scheduled send is delivered (the time-to-live counts from then).
        public var deliverAt: Timestamp?
        /// `validateOnly=true`: a dry run the services validate without delivering (FCM v1
        /// `validate_only`, legacy GCM `dry_run`); refused for APNs and WNS, which have none.
        public var validateOnly = false
        /// `topic=` (FCM v1 only): one message to the devices Firebase has subscribed to the
        /// topic, instead of registrations matched by tags.
        public var fcmTopic: String?
        /// `condition=` (FCM v1 only): one message to the devices whose topics satisfy it.
        public var fcmCondition: String?

        public init(
            pns: String?, toTag: String?, tagExpression: String? = nil, body: [UInt8], timeToLive: Int? = nil, deliverAt: Timestamp? = nil
        ) {
            self.pns = pns
            self.toTag = toTag
            self.tagExpression = tagExpression
            self.body = body
            self.timeToLive = timeToLive
            self.deliverAt = deliverAt
        }

        /// Parses `ttl=` (whole seconds, 0 to four weeks), naming the parameter when it is wrong.
        public static func timeToLive(_ text: String?) throws(GatewayError) -> Int? {
            guard let text, !text.isEmpty else { return nil }
            guard let seconds = Int(text), (0...RenderedNotification.maximumTimeToLiveSeconds).contains(seconds) else {
                throw .badRequest(
                    "ttl: '\(text)' must be whole seconds from 0 to \(RenderedNotification.maximumTimeToLiveSeconds) (four weeks)")
            }
            return seconds
        }
    }

    /// A send's result, and how its run ended (each API answers the ending in its own terms).
    public struct SendOutcome: Sendable {
        /// How the run that answers the request ended.
        public enum Ending: Sendable, Hashable {
            /// Ran to its end: the result's state says how (delivered, no target, nothing reachable).
            case finished
            /// Accepted, not finished here: the rest goes out later, elsewhere or after a restart.
            case continuing
            /// Cut short because the store failed, or by shutdown without the outbox: not (all) accepted.
            case interrupted
        }

        public var result: NotificationResult
        public var ending: Ending
        /// For secure sends: the id the recipient redeems with `GET /api/notifications/{id}`.
        public var secureID: String?
        /// A repeat (`Idempotency-Key`): the first send's notification, not sent again.
        public var replayed = false
        /// Refused after all: a concurrent request stored another send under the same key.
        public var refusal: GatewayError? = nil
    }

    /// A validated send: payloads rendered once per platform, ready to dispatch.
    public struct PreparedSend: Sendable {
        package var selection: PlatformSelection
        package var audience: Audience
        package var payloads: [Platform: RenderedNotification]
        /// Set for secure sends.
        package var secureID: String?
        /// Who sent it (the authenticated user, or the hub rule).
        package var sender: String
        /// Which registrations it reaches (the hub API's native and template sends).
        package var delivery: NotificationDelivery = .allRegistrations
    }

    /// Secure push: validates a secure send, stores its message, and renders the id-only payloads. Nothing is
    /// stored when the send is refused or when no registration matches.
    ///
    /// A scheduled secure send (`deliverAt`) keeps its message from the delivery time on for the
    /// lifetime, not from now.
    public func prepareSecure(
        _ request: SendRequest, user: AuthenticatedUser, deliverAt: Timestamp? = nil
    ) async throws(GatewayError) -> PreparedSend {
        let id = UUID().uuidString.lowercased()
        // Validate and render before storing, so that a refused send leaves nothing behind.
        var prepared = try prepareSecurePayloads(request, user: user, id: id, deliverAt: deliverAt)
        let recipient = request.toTag ?? ""
        let payload = try SendRequest.properties(from: request.body)["message"] ?? ""
        let created = now()
        guard try await hasTargets(prepared, at: created) else {
            return prepared  // delivered to nobody: 404, and no message stored
        }
        let message = SecureMessage(
            id: id, app: appID, recipient: recipient, sender: user.name, payload: payload, createdAt: created,
            expiresAt: max(created, deliverAt ?? created).adding(seconds: settings.secureMessageLifetime))
        try await storeCall { () throws(StoreError) in try await store.storeSecureMessage(message) }
        prepared.secureID = id
        return prepared
    }

    /// A secure send checked (one user, a message within its limit) and its id-only payloads
    /// rendered for `id`; nothing stored.
    package func prepareSecurePayloads(
        _ request: SendRequest, user: AuthenticatedUser, id: String, deliverAt: Timestamp?
    ) throws(GatewayError) -> PreparedSend {
        if request.fcmTopic.map({ !$0.isEmpty }) == true || request.fcmCondition.map({ !$0.isEmpty }) == true {
            throw .badRequest("secure push goes to one user (to_tag), not to an FCM topic or condition")
        }
        guard let recipient = request.toTag, !recipient.isEmpty else {
            throw .badRequest("to_tag is required for secure push (the one user who may read the message)")
        }
        let properties = try SendRequest.properties(from: request.body)
        let payload = properties["message"] ?? ""
        guard payload.utf8.count <= limits.maximumSecurePayloadBytes else {
            throw GatewayError(
                .tooLarge,
                "message: a secure message is \(payload.utf8.count) bytes; at most \(limits.maximumSecurePayloadBytes) are stored")
        }
        let body = Array(#"{"message":"","secureId":"\#(id)"}"#.utf8)
        return try prepare(
            SendRequest(
                pns: request.pns, toTag: recipient, tagExpression: nil, body: body, timeToLive: request.timeToLive, deliverAt: deliverAt),
            user: user, purpose: "secure")
    }

    /// Whether any registration matches a prepared send.
    package func hasTargets(_ prepared: PreparedSend, at time: Timestamp) async throws(GatewayError) -> Bool {
        // A topic or condition: Firebase knows its subscribers.
        guard prepared.audience.walksRegistrations else { return true }
        let expression = prepared.audience.expression
        do {
            for try await batch in store.registrations(
                matching: expression, platforms: prepared.selection, app: appID, batchSize: 1, now: time)
            where !batch.isEmpty {
                return true
            }
            return false
        } catch {
            throw GatewayError(.unavailable, "the registration store is unavailable")
        }
    }

    /// Validates a send and renders its payloads; throws the error the caller deserves before
    /// anything is sent.
    public func prepare(_ request: SendRequest, user: AuthenticatedUser, purpose: String = "notify") throws(GatewayError) -> PreparedSend {
        guard let pns = request.pns, !pns.isEmpty else {
            throw .badRequest("pns is required: \(Platform.names), all or a comma-separated list")
        }
        let selection: PlatformSelection
        do { selection = try PlatformSelection(parsing: pns) } catch { throw .badRequest("pns: \(error.description)") }
        let audience: Audience
        if let recipient = try request.fcmRecipient() {
            guard selection.platforms == [.fcm] else {
                throw .badRequest("pns: a topic or condition send is FCM v1's alone; use pns=fcm (not '\(pns)')")
            }
            audience = .fcm(recipient)
        } else if let text = request.tagExpression, !text.isEmpty {
            do { audience = .tags(try TagExpression(parsing: text)) } catch { throw .badRequest("tags: \(error.description)") }
        } else if let toTag = request.toTag, !toTag.isEmpty {
            do { audience = .tags(.tag(try Tag.username(toTag))) } catch { throw .badRequest("to_tag: \(error.description)") }
        } else {
            throw .badRequest(
                "to_tag is required (the recipient's user name), or tags= with a tag expression, or topic= / condition= (FCM)")
        }
        var properties = try SendRequest.properties(from: request.body)
        properties["user"] = user.name

        guard let templates = app.templates[purpose] else { throw GatewayError(.misconfigured, "no \(purpose) templates are configured") }
        var payloads: [Platform: RenderedNotification] = [:]
        for platform in selection.platforms {
            guard let template = templates[platform] else { continue }
            var payload: RenderedNotification
            do {
                payload = try template.render(properties)
            } catch {
                throw GatewayError.input(error, "\(platform): \(error.description)")
            }
            if let seconds = request.timeToLive {
                payload = payload.withTimeToLive(seconds, now: (request.deliverAt ?? now()).secondsSinceEpoch)
            }
            if request.validateOnly {
                guard let dryRun = payload.validatingOnly() else {
                    throw .badRequest(
                        "validateOnly: \(platform.serviceName) has no validation request; select pns=fcm and/or gcm for a dry run")
                }
                payload = dryRun
            }
            if case .fcm = audience, payload.body.count > PayloadLimit.fcmTopicBytes {
                throw GatewayError(
                    .tooLarge,
                    "fcm: the payload is \(payload.body.count) bytes; a topic or condition message may have \(PayloadLimit.fcmTopicBytes)")
            }
            payloads[platform] = payload
        }
        return PreparedSend(selection: selection, audience: audience, payloads: payloads, sender: user.name)
    }

    /// Counts and logs a finished synchronous send, and answers it.
    package func finished(
        _ result: NotificationResult, ending: SendOutcome.Ending, secureID: String?, started: ContinuousClock.Instant, logger: Logger
    ) -> SendOutcome {
        let duration = ContinuousClock.now - started
        metrics.sendFinished(duration: duration)
        logger.info(
            "send finished",
            metadata: [
                "state": "\(result.state)", "succeeded": "\(result.successCount)", "failed": "\(result.failureCount)",
                "ending": "\(ending)", "duration": "\(duration)",
            ])
        return SendOutcome(result: result, ending: ending, secureID: secureID)
    }
}

extension Sends.SendRequest {
    /// The FCM topic or condition a send names instead of tags, checked as Firebase documents them.
    package func fcmRecipient() throws(GatewayError) -> FCMRecipient? {
        let topic = fcmTopic.flatMap { $0.isEmpty ? nil : $0 }
        let condition = fcmCondition.flatMap { $0.isEmpty ? nil : $0 }
        guard topic != nil || condition != nil else { return nil }
        if topic != nil && condition != nil { throw .badRequest("give topic or condition, not both (an FCM message has one target)") }
        if toTag.map({ !$0.isEmpty }) == true || tagExpression.map({ !$0.isEmpty }) == true {
            throw .badRequest("topic and condition replace to_tag and tags: Firebase picks the devices; give one of them")
        }
        do {
            if let topic { return try FCMRecipient(topic: topic) }
            return try FCMRecipient(condition: condition ?? "")
        } catch {
            throw .badRequest(error.description)
        }
    }

    /// The template properties from a tutorial send's body: a JSON string is the message; a JSON
    /// object gives properties and must contain `message` (``TemplateProperties/BodyRules/message``).
    package static func properties(from body: [UInt8]) throws(GatewayError) -> TemplateProperties {
        do { return try TemplateProperties.parse(json: body, rules: .message) } catch { throw .badRequest("body: \(error.description)") }
    }
}
