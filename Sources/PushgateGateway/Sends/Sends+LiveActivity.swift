import Pushgate

/// A Live Activity send planned: its audience (its owner's push-to-start tokens for a start, its
/// update tokens otherwise), its stamp (the store's compare-and-set), and the one payload APNs
/// gets, with the push type and topic Apple requires. Everything after this is the send path of
/// every send: the outbox, the driver, the hooks (``LiveActivityHooks``).
extension Sends {
    func prepareLiveActivity(
        _ command: SendCommand, _ activity: SendCommand.LiveActivity, body: [UInt8]
    ) async throws(GatewayError)
        -> PreparedSend
    {
        guard let apns = app.configuration.services.apns else {
            throw GatewayError(.misconfigured, "Live Activities are sent through APNs, which this app does not configure")
        }
        guard case .token = apns.authentication else {
            throw .badRequest(
                "Live Activities need APNs token authentication (apns.keyId, apns.teamId, apns.privateKey): Apple refuses them with a certificate"
            )
        }
        let name: ActivityName
        do { name = try ActivityName(activity.name) } catch { throw .badRequest(error.description) }
        var message: LiveActivityMessage
        do { message = try LiveActivityMessage(event: activity.event, priority: activity.priority, body: body) } catch {
            throw .badRequest(error.description)
        }
        // `properties` fill the app's `liveactivity` template, when it has one: the content state.
        if let template = app.templates[LiveActivityMessage.templatePurpose]?[.apns] {
            do { try message.contentState(rendering: template) } catch { throw .badRequest(error.description) }
        }
        // A start may name its channel as Pushgate keeps it (`scores`) instead of Apple's id.
        if let channel = message.inputPushChannel {
            let appID = self.appID
            if let stored = try await storeCall({ () throws(StoreError) in try await store.channel(app: appID, name: channel) }) {
                message.inputPushChannel = stored.channelID
            }
        }
        let owner: RegistrationOwner
        switch command.sender {
        case .user(let user):
            guard activity.owner == nil || activity.owner == user.name else {
                throw .forbidden("an activity is its owner's: a user sends to their own activities only")
            }
            owner = .user(user.name)
        case .hubKey:
            if let text = activity.owner {
                guard let named = RegistrationOwner(exportText: text) else {
                    throw .badRequest("owner '\(text.prefix(40))' is not a user name")
                }
                owner = named
            } else {
                owner = .hub
            }
        }
        let key = LiveActivityKey(app: appID, owner: owner, name: name)
        if let channel = activity.channel {
            return try await prepareBroadcast(command, activity, channel: channel, message: message, key: key)
        }
        let selector: RegistrationSelector
        switch activity.event {
        case .start:
            guard let type = message.attributesType else { throw .badRequest("a start needs attributes-type") }
            var expression: TagExpression?
            if let tags = activity.tags?.trimmingCharacters(in: .whitespaces), !tags.isEmpty {
                do { expression = try TagExpression(parsing: tags) } catch { throw .badRequest("tags: \(error.description)") }
            }
            selector = RegistrationSelector(kind: .pushToStart(attributesType: type), owner: owner, expression: expression)
        case .update, .end:
            guard activity.tags == nil else {
                throw .badRequest("an \(activity.event.rawValue) reaches the activity's update tokens: give no tags")
            }
            selector = key.updateTokens
        }
        // Stamped before it is stored: the stamps of one activity increase across instances, and
        // a send whose page is claimed after a newer stamp is superseded (not sent).
        let time = now()
        let record = try await storeCall { () throws(StoreError) in
            try await store.stamp(
                key,
                LiveActivityStamping(
                    event: activity.event, requested: message.timestamp, priority: activity.priority,
                    contentState: message.contentStateText,
                    now: time))
        }
        let payload = message.payload(timestamp: record.stamp, name: name)
        return try Self.prepared(
            payload: payload, limit: LiveActivityMessage.maximumPayloadBytes, audience: .tokens(selector),
            headers: [
                HTTPHeader(name: "apns-push-type", value: APNSPushType.liveActivity.rawValue),
                HTTPHeader(name: "apns-topic", value: APNSPushType.liveActivity.topic(bundleID: apns.topic)),
                HTTPHeader(name: "apns-priority", value: String(activity.priority)),
            ], sender: command.sender)
    }

    /// A broadcast to a channel: an `update` or `end` (a broadcast cannot start an activity:
    /// start each device with `input-push-channel`), one request whatever the audience, within
    /// 5,120 bytes; `apns-expiration` 0 on a channel that stores no message (policy 0), else the
    /// activity's 8 hours from its stamp. Sent by whoever may reach everyone: an admin, a hub's
    /// backend.
    func prepareBroadcast(
        _ command: SendCommand, _ activity: SendCommand.LiveActivity, channel name: String, message: LiveActivityMessage,
        key: LiveActivityKey
    ) async throws(GatewayError) -> PreparedSend {
        if case .user(let user) = command.sender, !user.isAdmin {
            throw .forbidden("a broadcast reaches every device on its channel: admins only")
        }
        guard activity.event != .start else {
            throw .badRequest("a broadcast cannot start an activity: start each device with input-push-channel, then broadcast updates")
        }
        guard activity.tags == nil else { throw .badRequest("a broadcast reaches its channel's devices: give no tags") }
        let appID = self.appID
        guard let channel = try await storeCall({ () throws(StoreError) in try await store.channel(app: appID, name: name) }) else {
            throw .notFound("no broadcast channel '\(name.prefix(64))' (pushgate channels list)")
        }
        let time = now()
        let record = try await storeCall { () throws(StoreError) in
            try await store.stamp(
                key,
                LiveActivityStamping(
                    event: activity.event, requested: message.timestamp, priority: activity.priority,
                    contentState: message.contentStateText, now: time))
        }
        let expiration = channel.storagePolicy == 0 ? 0 : record.stamp + 8 * 3600
        return try Self.prepared(
            payload: message.payload(timestamp: record.stamp, name: key.name), limit: APNSChannelRecipient.maximumPayloadBytes,
            audience: .apnsChannel(APNSChannelRecipient(name: channel.name, channelID: channel.channelID)),
            headers: [
                HTTPHeader(name: "apns-push-type", value: APNSPushType.liveActivity.rawValue),
                HTTPHeader(name: "apns-priority", value: String(activity.priority)),
                HTTPHeader(name: "apns-expiration", value: String(expiration)),
            ], sender: command.sender)
    }

    /// The one APNs payload of a Live Activity send, within `limit` bytes.
    static func prepared(
        payload: [UInt8], limit: Int, audience: Audience, headers: [HTTPHeader], sender: SendCommand.Sender
    ) throws(GatewayError) -> PreparedSend {
        guard payload.count <= limit else {
            throw GatewayError(.tooLarge, "the Live Activity payload is \(payload.count) bytes; APNs takes at most \(limit)")
        }
        return PreparedSend(
            selection: PlatformSelection([.apns]), audience: audience,
            payloads: [.apns: RenderedNotification(platform: .apns, body: payload, headers: headers, contentType: "application/json")],
            secureID: nil, sender: sender.name)
    }
}
