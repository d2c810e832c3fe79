import Pushgate

extension APNSService {
    /// What the device does with a Live Activity push to one of its ActivityKit tokens. Nil when
    /// APNs accepts it (200, whether or not the device applies it: an old `timestamp`, an `update`
    /// to a push-to-start token, a `start` to an update token or of another attributes type are
    /// ignored on the device, as ActivityKit does); else APNs' refusal, with the `timestamp`
    /// (milliseconds) of a dead token's 410.
    ///
    /// A dead token (a push-to-start token replaced by a newer one, the update token of an
    /// activity that ended, was dismissed or timed out) is 410 `Unregistered` with the time it
    /// died: protocols.md §7 reports both `Unregistered` and `ExpiredToken`; `Unregistered` is the
    /// one Apple's table gives a `timestamp`.
    func receive(_ payload: LiveActivityPayload, token: SandboxLiveActivities.Token) -> (refusal: APNSRefusal, timestamp: Int64?)? {
        if let gone = token.goneAtMilliseconds { return (APNSRefusal(410, "Unregistered"), gone) }
        switch token.kind {
        case .pushToStart(let attributesType):
            guard payload.event == .start, payload.attributesType == attributesType else { return nil }
            if let channel = payload.inputPushChannel, state.liveActivities.channel(id: channel, app: credentials.apnsTopic) == nil {
                return (APNSRefusal(400, SandboxAssumptions.liveActivityUnknownChannelReason), nil)
            }
            _ = state.liveActivities.start(deviceID: token.deviceID, payload: payload)
        case .update(let activityID):
            state.liveActivities.receive(payload, activityID: activityID)
        }
        return nil
    }
}
