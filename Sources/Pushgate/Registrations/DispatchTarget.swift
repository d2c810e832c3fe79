/// One device to deliver to.
public struct DispatchTarget: Sendable, Hashable {
    public var registrationID: RegistrationID
    public var handle: DeviceHandle

    public init(registrationID: RegistrationID, handle: DeviceHandle) {
        self.registrationID = registrationID
        self.handle = handle
    }
}
