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
            throw GatewayError(
                .misconfigured,
                "Live Activities need APNs token authentication (apns.keyId, apns.teamId, apns.privateKey): Apple refuses them with a certificate"
            )
        }
        let name: ActivityName
        do { name = try ActivityName(activity.name) } catch { throw .badRequest(error.description) }
        var message: LiveActivityMessage
        do { message = try LiveActivityMessage(event: activity.event, priority: activity.priority, body: body) } catch {
            throw .badRequest(error.description)
        }
        if let given = message.attributes?[LiveActivityMessage.nameAttribute], given.stringValue != name.rawValue {
            throw .badRequest(
                "attributes.\(LiveActivityMessage.nameAttribute) names another activity than '\(name)': the app would register its update token under it; leave it out"
            )
        }
        // `properties` fill the app's `liveactivity` template, when it has one: the content state.
        if let template = app.templates[LiveActivityMessage.templatePurpose]?[.apns] {
            do { try message.contentState(rendering: template) } catch { throw .badRequest(error.description) }
        }
        // A start names its channel as Pushgate keeps it (`scores`) or by Apple's id: one of the app's.
        var channelName: String?
        if let channel = message.inputPushChannel {
            let appID = self.appID
            let channels = try await storeCall { () throws(StoreError) in try await store.channels(app: appID) }
            guard let stored = channels.first(where: { $0.name == channel || $0.channelID == channel }) else {
                throw .badRequest("input-push-channel: '\(channel.prefix(64))' is none of the app's channels (pushgate channels list)")
            }
            message.inputPushChannel = stored.channelID
            channelName = stored.name
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
        // Refused before it is stamped: a payload over Apple's limit (a stamp is as long as now),
        // and a send that reaches no token (nothing to stamp for).
        let limit = LiveActivityMessage.maximumPayloadBytes
        _ = try Self.checked(message.payload(timestamp: message.timestamp ?? Int64(now().secondsSinceEpoch), name: name), limit: limit)
        let prepared = PreparedSend(
            selection: PlatformSelection([.apns]), audience: .tokens(selector), payloads: [:], secureID: nil, sender: command.sender.name)
        guard try await hasTargets(prepared, at: now()) else {
            throw .notFound(
                activity.event == .start
                    ? "no push-to-start token of \(message.attributesType?.rawValue ?? "") is registered for this send"
                    : "activity '\(name)' has no update token (never registered, expired, or retired by its end)")
        }
        // Stamped before it is stored: the stamps of one activity increase across instances, and
        // a send whose page is claimed after a newer stamp is superseded (not sent).
        let record = try await stamp(key, message, activity: activity, channel: channelName)
        return try Self.prepared(
            payload: message.payload(timestamp: record.stamp, name: name), limit: limit, audience: .tokens(selector),
            headers: [
                HTTPHeader(name: "apns-push-type", value: APNSPushType.liveActivity.rawValue),
                HTTPHeader(name: "apns-topic", value: APNSPushType.liveActivity.topic(bundleID: apns.topic)),
                HTTPHeader(name: "apns-priority", value: String(activity.priority)),
            ], sender: command.sender)
    }

    /// The activity's stamp for this send (the store's compare-and-set).
    func stamp(
        _ key: LiveActivityKey, _ message: LiveActivityMessage, activity: SendCommand.LiveActivity, channel: String?
    )
        async throws(GatewayError) -> LiveActivityRecord
    {
        let stamping = LiveActivityStamping(
            event: activity.event, requested: message.timestamp, priority: activity.priority, contentState: message.contentStateText,
            now: now(), channel: channel)
        return try await storeCall { () throws(StoreError) in try await store.stamp(key, stamping) }
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
        _ = try Self.checked(
            message.payload(timestamp: message.timestamp ?? Int64(now().secondsSinceEpoch), name: key.name),
            limit: APNSChannelRecipient.maximumPayloadBytes)
        let record = try await stamp(key, message, activity: activity, channel: channel.name)
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
        PreparedSend(
            selection: PlatformSelection([.apns]), audience: audience,
            payloads: [
                .apns: RenderedNotification(
                    platform: .apns, body: try checked(payload, limit: limit), headers: headers, contentType: "application/json")
            ],
            secureID: nil, sender: sender.name)
    }

    /// `payload`, refused (413) past APNs' `limit`.
    static func checked(_ payload: [UInt8], limit: Int) throws(GatewayError) -> [UInt8] {
        guard payload.count <= limit else {
            throw GatewayError(.tooLarge, "the Live Activity payload is \(payload.count) bytes; APNs takes at most \(limit)")
        }
        return payload
    }
}
