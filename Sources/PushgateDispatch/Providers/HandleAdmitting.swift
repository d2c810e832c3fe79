import Pushgate

/// A provider that checks a handle before it is registered, beyond the handle rules
/// (``HandlePolicy``): a UnifiedPush endpoint's discovery answer. Asked through
/// ``Dispatcher/admissionProblem(_:)``, with the providers of the moment.
public protocol HandleAdmitting: PushProvider {
    /// Why `handle` must not be registered, or nil when it may be.
    func admissionProblem(_ handle: DeviceHandle) async -> String?
}
