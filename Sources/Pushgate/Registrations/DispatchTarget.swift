/// One target of a send: a stored registration's device, a device handle given with the send, or
/// an audience a push service fans out itself.
public struct DispatchTarget: Sendable, Hashable {
    public var registrationID: RegistrationID
    public var handle: DeviceHandle
    public var kind: Kind

    /// What stands behind a target, which decides what the outbox does with it: only a
    /// registration is read again when its page is claimed again and pruned or rewritten when
    /// its service says the handle is gone or replaced.
    public enum Kind: Sendable, Hashable {
        /// A stored registration (`registrationID` names it).
        case registration
        /// A device handle given with the send (a hub API direct send): nothing is stored for it;
        /// `registrationID` is its place in the send (`direct-0001`).
        case device
        /// An audience the push service fans out to the devices subscribed to it (an FCM topic or
        /// condition): one target for many devices, never pruned, reported as the audience it
        /// stands for (``reported``).
        case audience
    }

    public init(registrationID: RegistrationID, handle: DeviceHandle, kind: Kind = .registration) {
        self.registrationID = registrationID
        self.handle = handle
        self.kind = kind
    }

    /// Whether a registration stands behind the target.
    public var isRegistration: Bool { kind == .registration }

    /// How results show the target's handle: masked for a device (a handle is a credential of a
    /// sort), whole for an audience, which names no device (`/topics/news`, a condition).
    public var reported: String { kind == .audience ? handle.value : handle.masked }
}
