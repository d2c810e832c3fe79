import Pushgate

extension Dispatcher {
    /// Why `handle` must not be registered, by its platform's provider (nil when the provider
    /// has nothing to check). A UnifiedPush handle with no `unifiedpush` provider is refused: its
    /// endpoint cannot be checked.
    public func admissionProblem(_ handle: DeviceHandle) async -> String? {
        let lease = lease()
        let problem: String?
        switch lease.providers[handle.platform] {
        case let provider as any HandleAdmitting: problem = await provider.admissionProblem(handle)
        case nil where handle.platform == .unifiedpush:
            problem = "UnifiedPush is not configured for this app (services.unifiedpush): its endpoint cannot be checked"
        default: problem = nil
        }
        await lease.release()
        return problem
    }
}
