import Foundation
import Logging
import Pushgate
import PushgateDispatch

extension Sends {
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

    // MARK: The one planning step

    /// The command validated and rendered: the one planning step of every send, whichever API it
    /// came through. Its audience by ``audience(of:platform:)``, a message by the app's templates
    /// (``renderMessage(_:body:audience:user:purpose:)``), a secure message stored for its one
    /// recipient (``prepareSecure(_:body:audience:user:)``), a hub send by its format
    /// (``prepareHub(_:format:body:headers:)``). Throws the error the caller deserves before
    /// anything is sent.
    package func prepare(_ command: SendCommand) async throws(GatewayError) -> PreparedSend {
        switch command.content {
        case .message(let body, let secure):
            guard case .user(let user) = command.sender else { throw .badRequest("a message send is the tutorial API's") }
            let audience = try audience(of: command, platform: nil)
            return secure
                ? try await prepareSecure(command, body: body, audience: audience, user: user)
                : try renderMessage(command, body: body, audience: audience, user: user, purpose: "notify")
        case .notificationHubs(let format, let body, let headers):
            return try prepareHub(command, format: format, body: body, headers: headers)
        case .liveActivity(let activity, let body):
            return try await prepareLiveActivity(command, activity, body: body)
        }
    }

    /// Whom a command reaches: every audience rule of both APIs, here once. `platform` is a
    /// direct send's (its handles are that service's).
    func audience(of command: SendCommand, platform: Platform?) throws(GatewayError) -> Audience {
        let message: Bool
        if case .message = command.content { message = true } else { message = false }
        switch command.audience {
        case .user(let name):
            guard message else { throw .badRequest("a hub send names tags or device handles") }
            do { return .tags(.tag(try Tag.username(name))) } catch { throw .badRequest("to_tag: \(error.description)") }
        case .tags(let given):
            let field = message ? "tags" : "ServiceBusNotification-Tags"
            // Only an absent header means everyone (as Notification Hubs documents it): a blank
            // one is a mistake, never a broadcast.
            let text = given.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else {
                throw .badRequest(
                    "\(field) is present but blank; give a tag or tag expression"
                        + (message ? "" : ", or omit the header to send to every registration"))
            }
            do { return .tags(try TagExpression(parsing: text)) } catch { throw .badRequest("\(field): \(error.description)") }
        case .fcmTopic(let topic):
            guard message else { throw .badRequest("a hub send names tags or device handles") }
            do { return .fcm(try FCMRecipient(topic: topic)) } catch { throw .badRequest(error.description) }
        case .fcmCondition(let condition):
            guard message else { throw .badRequest("a hub send names tags or device handles") }
            do { return .fcm(try FCMRecipient(condition: condition)) } catch { throw .badRequest(error.description) }
        case .devices(let handles, let field):
            guard !message else { throw .badRequest("a message send names to_tag, tags, topic or condition") }
            guard let platform else {
                throw .badRequest("a direct send takes a native format (\(HubFormat.nativeNames)), not template")
            }
            guard !handles.isEmpty, handles.count <= Audience.maximumDirectHandles else {
                throw .badRequest("a direct send takes 1 to \(Audience.maximumDirectHandles) device handles, not \(handles.count)")
            }
            var checked: [DeviceHandle] = []
            for (index, text) in handles.enumerated() {
                do { checked.append(try app.configuration.handles.validate(text, for: platform)) } catch {
                    throw .badRequest("\(handles.count > 1 ? "\(field)[\(index)]" : field): \(error.description)")
                }
            }
            return .direct(handles: checked)
        case .everyone:
            guard !message else { throw .badRequest("a message send names to_tag, tags, topic or condition") }
            return .everyone
        case .liveActivity:
            throw .badRequest("a Live Activity's tokens are reached by its own sends (POST /api/liveactivities/{name})")
        }
    }

    /// A message send rendered by the app's `purpose` templates (`notify`, or `secure` for the
    /// id-only payloads) for the platforms `pns` selects, with the command's time to live and
    /// validation.
    func renderMessage(
        _ command: SendCommand, body: [UInt8], audience: Audience, user: AuthenticatedUser, purpose: String
    ) throws(GatewayError) -> PreparedSend {
        guard let pns = command.platforms, !pns.isEmpty else {
            throw .badRequest("pns is required: \(Platform.names), all or a comma-separated list")
        }
        let selection: PlatformSelection
        do { selection = try PlatformSelection(parsing: pns) } catch { throw .badRequest("pns: \(error.description)") }
        if case .fcm = audience, selection.platforms != [.fcm] {
            throw .badRequest("pns: a topic or condition send is FCM v1's alone; use pns=fcm (not '\(pns)')")
        }
        var properties = try SendCommand.properties(from: body)
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
            if let seconds = command.timeToLive?.value {
                payload = payload.withTimeToLive(seconds, now: (command.deliverAt?.value ?? now()).secondsSinceEpoch)
            }
            if command.validateOnly {
                guard let dryRun = payload.validatingOnly() else {
                    throw .badRequest(
                        "validateOnly: \(platform.serviceName) has no validation request; select pns=fcm, gcm and/or hms for a dry run")
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

    // MARK: Secure push

    /// Secure push: validates a secure send, stores its message, and renders the id-only payloads.
    /// Nothing is stored when the send is refused or when no registration matches.
    ///
    /// A scheduled secure send (`deliverAt`) keeps its message from the delivery time on for the
    /// lifetime, not from now.
    func prepareSecure(
        _ command: SendCommand, body: [UInt8], audience: Audience, user: AuthenticatedUser
    ) async throws(GatewayError) -> PreparedSend {
        let id = UUID().uuidString.lowercased()
        // Validate and render before storing, so that a refused send leaves nothing behind.
        var prepared = try securePayloads(command, body: body, audience: audience, user: user, id: id)
        guard case .user(let recipient) = command.audience else { return prepared }
        let payload = try SendCommand.properties(from: body)["message"] ?? ""
        let created = now()
        guard try await hasTargets(prepared, at: created) else {
            return prepared  // delivered to nobody: 404, and no message stored
        }
        let deliverAt = command.deliverAt?.value
        let message = SecureMessage(
            id: id, app: appID, recipient: recipient, sender: user.name, payload: payload, createdAt: created,
            expiresAt: max(created, deliverAt ?? created).adding(seconds: settings.secureMessageLifetime))
        try await storeCall { () throws(StoreError) in try await store.storeSecureMessage(message) }
        prepared.secureID = id
        return prepared
    }

    /// A secure send checked (one user, a message within its limit) and its id-only payloads
    /// rendered for `id`; nothing stored.
    func securePayloads(
        _ command: SendCommand, body: [UInt8], audience: Audience, user: AuthenticatedUser, id: String
    ) throws(GatewayError) -> PreparedSend {
        switch command.audience {
        case .user: break
        case .fcmTopic, .fcmCondition: throw .badRequest("secure push goes to one user (to_tag), not to an FCM topic or condition")
        case .tags, .devices, .everyone, .liveActivity:
            throw .badRequest("to_tag is required for secure push (the one user who may read the message)")
        }
        let payload = try SendCommand.properties(from: body)["message"] ?? ""
        guard payload.utf8.count <= limits.maximumSecurePayloadBytes else {
            throw GatewayError(
                .tooLarge,
                "message: a secure message is \(payload.utf8.count) bytes; at most \(limits.maximumSecurePayloadBytes) are stored")
        }
        let idOnly = Array(#"{"message":"","secureId":"\#(id)"}"#.utf8)
        return try renderMessage(command, body: idOnly, audience: audience, user: user, purpose: "secure")
    }

    /// Whether any registration matches a prepared send.
    package func hasTargets(_ prepared: PreparedSend, at time: Timestamp) async throws(GatewayError) -> Bool {
        // A topic or condition: Firebase knows its subscribers (and direct handles are there).
        guard let selector = prepared.audience.selector else { return true }
        do {
            for try await batch in store.deliveryTargets(
                selecting: selector, platforms: prepared.selection, app: appID, pageSize: 1, now: time)
            where !batch.isEmpty {
                return true
            }
            return false
        } catch {
            throw GatewayError(.unavailable, "the registration store is unavailable")
        }
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

extension SendCommand {
    /// The template properties from a tutorial send's body: a JSON string is the message; a JSON
    /// object gives properties and must contain `message` (``TemplateProperties/BodyRules/message``).
    package static func properties(from body: [UInt8]) throws(GatewayError) -> TemplateProperties {
        do { return try TemplateProperties.parse(json: body, rules: .message) } catch { throw .badRequest("body: \(error.description)") }
    }

    /// Parses `ttl=` (whole seconds, 0 to four weeks), naming the parameter when it is wrong.
    public static func timeToLive(parsing text: String?) throws(GatewayError) -> Int? {
        guard let text, !text.isEmpty else { return nil }
        guard let seconds = Int(text), (0...RenderedNotification.maximumTimeToLiveSeconds).contains(seconds) else {
            throw .badRequest(
                "ttl: '\(text)' must be whole seconds from 0 to \(RenderedNotification.maximumTimeToLiveSeconds) (four weeks)")
        }
        return seconds
    }
}
