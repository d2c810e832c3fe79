import Foundation
import Pushgate

/// APNs broadcast channel management (iOS 18; protocols.md §8): an app's channels created, read,
/// listed and deleted, with Apple's reasons (`MissingChannelId`, `BadChannelId`,
/// `ChannelNotRegistered`, `MissingPushType`, `InvalidPushType`, `CannotCreateChannelConfig`)
/// and the same authentication as sends. Every answer carries `apns-request-id`: the request's,
/// or a new lower-case UUID.
///
/// | op | request | answer |
/// |---|---|---|
/// | create | `POST /1/apps/<bundleId>/channels` `{"message-storage-policy":0,"push-type":"LiveActivity"}` | 201, `apns-channel-id` |
/// | read | `GET /1/apps/<bundleId>/channels` + `apns-channel-id` | 200 `{"message-storage-policy":0,"push-type":"LiveActivity"}` |
/// | list | `GET /1/apps/<bundleId>/all-channels` | 200 `{"channels":[…]}` |
/// | delete | `DELETE /1/apps/<bundleId>/channels` + `apns-channel-id` | 204 |
struct APNSChannelService: SandboxHTTPResponder {
    let state: SandboxState
    let authenticator: APNSAuthenticator

    static let pathPrefix = "/1/apps/"

    private enum Operation {
        case create, read, list, delete
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let requestID = request.header("apns-request-id") ?? UUID().uuidString.lowercased()
        var padding = 0
        let response = await answer(request, headers: [HTTPHeader(name: "apns-request-id", value: requestID)], padding: &padding)
        state.count("apns-channels", status: response.status)
        return response.padded(padding)
    }

    /// The channel an `apns-channel-id` names, among `app`'s: `MissingChannelId`, `BadChannelId`
    /// (not base64, or longer than the sandbox allows) or `ChannelNotRegistered` (unknown, deleted,
    /// or another app's) otherwise.
    static func channel(_ id: String?, app: String, in liveActivities: SandboxLiveActivities) throws(APNSRefusal) -> SandboxChannel {
        guard let id, !id.isEmpty else { throw APNSRefusal(400, "MissingChannelId") }
        guard id.utf8.count <= SandboxAssumptions.apnsMaximumChannelIDLength, Data(base64Encoded: id) != nil else {
            throw APNSRefusal(400, "BadChannelId")
        }
        guard let channel = liveActivities.channel(id: id, app: app) else { throw APNSRefusal(400, "ChannelNotRegistered") }
        return channel
    }

    private func answer(_ request: SandboxHTTPRequest, headers: [HTTPHeader], padding: inout Int) async -> SandboxHTTPResponse {
        func refuse(_ refusal: APNSRefusal) -> SandboxHTTPResponse { APNSAnswer.refusal(refusal, headers: headers) }
        // "", "1", "apps", <bundleId>, "channels" | "all-channels"
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, !parts[3].isEmpty else { return refuse(APNSRefusal(404, "BadPath")) }
        let app = String(parts[3])
        let operation: Operation
        switch (parts[4], request.method) {
        case ("channels", "POST"): operation = .create
        case ("channels", "GET"): operation = .read
        case ("channels", "DELETE"): operation = .delete
        case ("all-channels", "GET"): operation = .list
        case ("channels", _), ("all-channels", _): return refuse(APNSRefusal(405, "MethodNotAllowed"))
        default: return refuse(APNSRefusal(404, "BadPath"))
        }

        let channelID = request.header("apns-channel-id")
        if let action = state.takeFault(service: .apnsChannels, handle: channelID ?? app),
            let response = await APNSAnswer.apply(action, state: state, service: "apns-channels", headers: headers, padding: &padding)
        {
            return response
        }
        if APNSAnswer.hasDuplicateHeaders(request) { return refuse(APNSRefusal(400, "DuplicateHeaders")) }
        if let refusal = await authenticator.authenticateApp(request, app: app) { return refuse(refusal) }

        let liveActivities = state.liveActivities
        switch operation {
        case .create:
            do throws(APNSRefusal) {
                let policy = try Self.creation(request.body)
                guard let channel = liveActivities.createChannel(app: app, messageStoragePolicy: policy) else {
                    throw APNSRefusal(400, "CannotCreateChannelConfig")
                }
                return SandboxHTTPResponse(status: 201, headers: headers + [HTTPHeader(name: "apns-channel-id", value: channel.id)])
            } catch {
                return refuse(error)
            }
        case .list:
            let ids = liveActivities.channelIDs(app: app).map { JSONValue(.string($0)) }
            let body = JSONValue(.object([JSONMember(key: "channels", value: JSONValue(.array(ids)))])).serialized()
            return .json(200, String(decoding: body, as: UTF8.self), headers: headers)
        case .read, .delete:
            let channel: SandboxChannel
            do throws(APNSRefusal) {
                channel = try Self.channel(channelID, app: app, in: liveActivities)
            } catch {
                return refuse(error)
            }
            if operation == .delete {
                liveActivities.deleteChannel(id: channel.id, app: app)
                return SandboxHTTPResponse(status: 204, headers: headers)
            }
            return .json(
                200, #"{"message-storage-policy":\#(channel.messageStoragePolicy),"push-type":"LiveActivity"}"#, headers: headers)
        }
    }

    /// The `message-storage-policy` of a create request's body, checked: `push-type` must be
    /// `LiveActivity` (any case: node-apn sends it lower-case; Apple's case rule is unconfirmed).
    private static func creation(_ body: [UInt8]) throws(APNSRefusal) -> Int {
        let object: JSONValue
        if body.isEmpty {
            object = JSONValue(.object([]))
        } else {
            guard let parsed = try? JSONParser.parse(body), parsed.objectMembers != nil else {
                throw APNSRefusal(400, SandboxAssumptions.apnsBadChannelBodyReason)
            }
            object = parsed
        }
        guard let pushType = object["push-type"] else { throw APNSRefusal(400, "MissingPushType") }
        guard pushType.stringValue?.lowercased() == "liveactivity" else { throw APNSRefusal(400, "InvalidPushType") }
        guard case .number(let text) = object["message-storage-policy"]?.kind, let policy = Int(text), policy == 0 || policy == 1 else {
            throw APNSRefusal(400, SandboxAssumptions.apnsBadStoragePolicyReason)
        }
        return policy
    }
}
