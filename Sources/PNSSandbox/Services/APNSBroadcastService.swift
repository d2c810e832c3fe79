import Foundation
import Pushgate

/// APNs broadcast sends (iOS 18; protocols.md §8): `POST /4/broadcasts/apps/<bundleId>` with
/// `apns-channel-id`, `apns-push-type: liveactivity` (any case), `apns-expiration` (0 on a
/// no-storage channel) and `apns-priority` 5 or 10, no `apns-topic`; an `update` or `end` of at most
/// 5120 bytes. Answers 200 with `apns-request-id` and hands the payload to every running activity
/// listening to the channel, each applying ActivityKit's timestamp rule; each device reached gets
/// it in its inbox.
struct APNSBroadcastService: SandboxHTTPResponder {
    let state: SandboxState
    let authenticator: APNSAuthenticator

    static let pathPrefix = "/4/broadcasts/apps/"

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let requestID = request.header("apns-request-id") ?? UUID().uuidString.lowercased()
        var padding = 0
        let response = await answer(
            request, requestID: requestID, headers: [HTTPHeader(name: "apns-request-id", value: requestID)], padding: &padding)
        state.count("apns-broadcast", status: response.status)
        return response.padded(padding)
    }

    private func answer(
        _ request: SandboxHTTPRequest, requestID: String, headers: [HTTPHeader], padding: inout Int
    ) async
        -> SandboxHTTPResponse
    {
        func refuse(_ refusal: APNSRefusal) -> SandboxHTTPResponse { APNSAnswer.refusal(refusal, headers: headers) }
        guard request.method == "POST" else { return refuse(APNSRefusal(405, "MethodNotAllowed")) }
        // "", "4", "broadcasts", "apps", <bundleId>
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, !parts[4].isEmpty else { return refuse(APNSRefusal(404, "BadPath")) }
        let app = String(parts[4])
        if request.bodyTooLarge { return refuse(APNSRefusal(413, "PayloadTooLarge")) }

        let channelID = request.header("apns-channel-id")
        if let action = state.takeFault(service: .apnsBroadcast, handle: channelID),
            let response = await APNSAnswer.apply(action, state: state, service: "apns-broadcast", headers: headers, padding: &padding)
        {
            return response
        }
        if APNSAnswer.hasDuplicateHeaders(request) { return refuse(APNSRefusal(400, "DuplicateHeaders")) }
        if let refusal = await authenticator.authenticateApp(request, app: app) { return refuse(refusal) }

        let payload: LiveActivityPayload
        let channel: SandboxChannel
        do throws(APNSRefusal) {
            channel = try APNSChannelService.channel(channelID, app: app, in: state.liveActivities)
            try Self.checkHeaders(request, channel: channel)
            if request.body.isEmpty { throw APNSRefusal(400, "PayloadEmpty") }
            if request.body.count > ServiceLimits.apnsBroadcastPayloadBytes { throw APNSRefusal(413, "PayloadTooLarge") }
            guard let json = try? JSONParser.parse(request.body), json.objectMembers != nil else {
                throw APNSRefusal(400, SandboxAssumptions.apnsInvalidJSONReason)
            }
            // "Broadcast cannot start an activity": a start is `BadEvent`.
            payload = try LiveActivityPayload.parse(json, events: [.update, .end])
        } catch {
            return refuse(error)
        }

        // Devices that are gone receive nothing; the others apply the payload per activity.
        let liveActivities = state.liveActivities
        let reachable = liveActivities.listeningDevices(channelID: channel.id).filter { state.lookUp(id: $0)?.status == .active }
        let reached = Set(liveActivities.broadcast(payload, channelID: channel.id, deviceIDs: reachable).map(\.deviceID))
        let now = state.clock.now.secondsSinceEpoch
        for deviceID in reached.sorted() {
            state.deliver(
                deviceID: deviceID,
                state.keepsInboxes
                    ? ReceivedNotification(
                        platform: .apns, deviceID: deviceID, messageID: requestID,
                        headers: request.headers.filter { $0.name.hasPrefix("apns-") || $0.name == "content-type" },
                        payload: String(decoding: request.body, as: UTF8.self), receivedAt: now) : nil)
        }
        return SandboxHTTPResponse(status: 200, headers: headers)
    }

    /// `apns-push-type` (`liveactivity`, any case: Apple's text writes `Liveactivity`),
    /// `apns-expiration` (required; 0 on a channel that stores no message) and `apns-priority`
    /// (required, 5 or 10).
    private static func checkHeaders(_ request: SandboxHTTPRequest, channel: SandboxChannel) throws(APNSRefusal) {
        guard let pushType = request.header("apns-push-type") else { throw APNSRefusal(400, "MissingPushType") }
        guard pushType.lowercased() == "liveactivity" else { throw APNSRefusal(400, "InvalidPushType") }
        guard let expirationText = request.header("apns-expiration") else {
            throw APNSRefusal(400, SandboxAssumptions.apnsMissingExpirationReason)
        }
        guard let expiration = Int64(expirationText), expiration >= 0, channel.messageStoragePolicy != 0 || expiration == 0 else {
            throw APNSRefusal(400, "BadExpirationDate")
        }
        guard let priority = request.header("apns-priority") else { throw APNSRefusal(400, SandboxAssumptions.apnsMissingPriorityReason) }
        guard priority == "5" || priority == "10" else { throw APNSRefusal(400, "BadPriority") }
    }
}
