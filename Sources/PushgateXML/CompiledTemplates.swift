import Pushgate
import Synchronization

extension RegistrationTemplate {
    /// The template compiled for `platform` (checked as an app template is); with a `cache`,
    /// compiled once per text: a template send renders the same few templates for every page of
    /// every send (``CompiledTemplates``, one per server).
    public func compiled(for platform: Platform, cache: CompiledTemplates? = nil) throws(TemplateError) -> PlatformTemplate {
        let key = CompiledTemplates.Key(platform: platform, body: body, headers: headers)
        if let compiled = cache?.get(key) { return compiled }
        let headers = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let format = Template.Format.resolved(for: platform, headers: headers, body: body)
        let compiled = try PlatformTemplate(platform: platform, template: try Template(format: format, text: body), headers: headers)
        cache?.put(key, compiled)
        return compiled
    }
}

/// Compiled registration templates by their text, at most `capacity` of them (when full, the
/// table starts over: templates are few and shared by many registrations, so it refills with
/// the ones in use). One per server, shared by its hubs' drives.
public final class CompiledTemplates: Sendable {
    public struct Key: Hashable, Sendable {
        var platform: Platform
        var body: String
        var headers: [String: String]
    }

    private let table = Mutex<[Key: PlatformTemplate]>([:])
    let capacity: Int

    public init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

    func get(_ key: Key) -> PlatformTemplate? { table.withLock { $0[key] } }

    func put(_ key: Key, _ compiled: PlatformTemplate) {
        table.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[key] = compiled
        }
    }

    public var count: Int { table.withLock { $0.count } }

    public func contains(platform: Platform, body: String, headers: [String: String]) -> Bool {
        get(Key(platform: platform, body: body, headers: headers)) != nil
    }
}
