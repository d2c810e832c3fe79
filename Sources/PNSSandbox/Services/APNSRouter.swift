/// The APNs listener's requests by path: device sends (`/3/device/…`), broadcast channel
/// management (`/1/apps/…`, which Apple serves on `api-manage-broadcast[.sandbox].push.apple.com`)
/// and broadcast sends (`/4/broadcasts/apps/…`). The paths do not collide, so one listener serves
/// all three, as one configurable host each in a gateway.
struct APNSRouter: SandboxHTTPResponder {
    let devices: APNSService
    let channels: APNSChannelService
    let broadcasts: APNSBroadcastService

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        let path = request.path
        if path.hasPrefix(APNSChannelService.pathPrefix) { return await channels.respond(to: request) }
        if path.hasPrefix(APNSBroadcastService.pathPrefix) { return await broadcasts.respond(to: request) }
        return await devices.respond(to: request)
    }
}
