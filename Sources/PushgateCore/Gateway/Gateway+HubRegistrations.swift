import Foundation
import Pushgate

/// The hub API's registration rules, in the core beside the tutorial API's: who may write what,
/// `If-Match`, the writes themselves. The hub's HTTP layer parses Atom and JSON and answers;
/// it does not reach the store.
extension Gateway {
    /// Who writes through the hub API, as the key's rights say.
    public enum HubWriter: Sendable, Hashable {
        /// A key with only the Listen right: what every copy of an app carries.
        case device
        /// A key with the Send or Manage right: the app's backend.
        case backend

        var tagWriter: TagPolicy.Writer { self == .backend ? .hubBackend : .hubDevice }
    }

    /// The owner of registrations written through the hub API (a user's are owned by that user).
    package static let hubOwner = "$hub"

    /// Supplied tags as ``TagPolicy`` checks them for `writer`, `field` naming where they were.
    package static func hubTags(_ texts: [String], writer: HubWriter, field: String) throws(GatewayError) -> [Tag] {
        do { return try TagPolicy.check(texts, writer: writer.tagWriter) } catch {
            throw GatewayError(error.isForbidden ? .forbidden : .invalid, "\(field): \(error.description)")
        }
    }

    /// A registration of this hub, if it exists.
    package func hubRegistration(_ id: RegistrationID) async throws(GatewayError) -> Registration? {
        try await stored { () throws(StoreError) in try await store.registration(id: id, app: appID) }
    }

    /// A fresh registration id (`POST /{hub}/registrationIDs`).
    package func reserveHubRegistrationID() async throws(GatewayError) -> RegistrationID {
        let time = now()
        return try await stored { () throws(StoreError) in
            try await store.createRegistrationID(app: appID, owner: Self.hubOwner, maximumReserved: 1_000_000, now: time)
        }
    }

    /// Writes `registration` (made by the hub API, owned by the hub): a user's registration
    /// (made through the authenticated `/api/register`) is out of a device key's reach, and
    /// `ifMatch`, when given, must name the current ETag.
    package func writeHubRegistration(_ registration: Registration, writer: HubWriter, ifMatch: String?) async throws(GatewayError) {
        let current = try await hubRegistration(registration.id)
        if let current { try Self.checkHubOwner(current, writer: writer) }
        if ifMatch != nil { try Self.checkIfMatch(ifMatch, current) }
        let time = now()
        try await stored { () throws(StoreError) in try await store.restore([registration], now: time) }
    }

    /// Deletes a registration by the same rules as ``writeHubRegistration(_:writer:ifMatch:)``.
    package func deleteHubRegistration(_ id: RegistrationID, writer: HubWriter, ifMatch: String?) async throws(GatewayError) {
        guard let registration = try await hubRegistration(id) else { throw .notFound("no registration \(id.rawValue)") }
        try Self.checkIfMatch(ifMatch, registration)
        try Self.checkHubOwner(registration, writer: writer)
        _ = try await stored { () throws(StoreError) in try await store.delete(id: id, app: appID) }
    }

    /// A user's registration is theirs: a device key may not replace or delete it.
    static func checkHubOwner(_ registration: Registration, writer: HubWriter) throws(GatewayError) {
        guard registration.owner != hubOwner, writer == .device else { return }
        throw GatewayError(
            .forbidden,
            "registration \(registration.id.rawValue) belongs to a user (made through /api/register); a Listen key may not change it")
    }

    /// `If-Match`: `*`, or the registration's ETag (weak or strong, quoted or not).
    static func checkIfMatch(_ header: String?, _ registration: Registration?) throws(GatewayError) {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return }
        guard let registration else { throw GatewayError(.preconditionFailed, "If-Match: the registration does not exist") }
        if header == "*" { return }
        let wanted = header.trimmingCharacters(in: CharacterSet(charactersIn: "\"W/"))
        guard wanted == registrationETag(registration) else {
            throw GatewayError(
                .preconditionFailed,
                "If-Match: the registration changed (its ETag is \(registrationETag(registration)), not \(wanted.prefix(40)))")
        }
    }

    /// The hub's registrations holding `handle` (an upper-case hex token found as stored, lower-case),
    /// after `after`, at most `limit`, by id.
    package func hubRegistrations(handle: String, after: RegistrationID?, limit: Int) async throws(GatewayError) -> [Registration] {
        var ids = try await registrationIDs(holding: handle)
        if ids.isEmpty, handle.allSatisfy(\.isHexDigit) {
            let lowered = handle.lowercased()
            ids = try await stored { () throws(StoreError) in try await store.registrationIDs(handle: lowered, app: appID) }
        }
        var found: [Registration] = []
        for id in ids.sorted().filter({ after == nil || $0 > after! }).prefix(limit) {
            if let registration = try await hubRegistration(id) { found.append(registration) }
        }
        return found
    }

    /// The hub's registrations matching `expression` (every one when nil) after `after`, at most
    /// `limit`, by id: one page of a listing.
    package func hubRegistrationPage(
        matching expression: TagExpression?, after: RegistrationID?, limit: Int
    ) async throws(GatewayError) -> [Registration] {
        do {
            for try await batch in store.registrations(
                matching: expression, platforms: PlatformSelection(Platform.allCases), app: appID, batchSize: limit, now: now(),
                after: after)
            {
                return batch
            }
            return []
        } catch {
            throw GatewayError(.unavailable, "the registration store is unavailable")
        }
    }

    /// Every registration carrying `tag` (an installation's: its native one and one per template).
    package func hubRegistrations(tagged tag: Tag) async throws(GatewayError) -> [Registration] {
        var found: [Registration] = []
        do {
            for try await batch in store.registrations(
                matching: .tag(tag), platforms: PlatformSelection(Platform.allCases), app: appID, batchSize: 200, now: now())
            {
                found += batch
            }
        } catch {
            throw GatewayError(.unavailable, "the registration store is unavailable")
        }
        return found
    }

    /// Writes installation `id` as `registrations` (its native registration first, then one per
    /// template) and drops the ones it no longer has, by the installation rules:
    /// - `userId` (the `$UserId:{…}` tag) binds the installation to a user, whose sends it then
    ///   receives: a device key may keep or drop the `userId` a backend set, not choose one;
    /// - and may not point an installation bound to a user at another push channel (the device
    ///   renews its channel through its backend, or drops the `userId` first).
    package func writeHubInstallation(
        _ id: String, registrations: [Registration], userID: String?, writer: HubWriter
    ) async throws(GatewayError) {
        guard let native = registrations.first else { return }
        let implicit: Tag
        do { implicit = try Tag("$InstallationId:{\(id)}") } catch { throw .badRequest(error.description) }
        let previous = try await hubRegistrations(tagged: implicit)
        let previousNative = previous.first(where: { $0.id == native.id })
        if writer == .device, let previousNative, previousNative.handle.value != native.handle.value,
            previousNative.tags.contains(where: { $0.rawValue.hasPrefix("$UserId:{") })
        {
            throw GatewayError(
                .forbidden,
                "pushChannel: installation '\(id.prefix(60))' is bound to a user (userId); its push channel may be replaced only with a Send or Manage key"
            )
        }
        if let userID, writer == .device, previousNative?.tags.contains(where: { $0.rawValue == "$UserId:{\(userID)}" }) != true {
            throw GatewayError(
                .forbidden,
                "userId: '\(userID.prefix(60))' may be set only with a Send or Manage key; a Listen key may keep the installation's userId or remove it (whoever sets it receives that user's notifications)"
            )
        }
        let kept = Set(registrations.map(\.id))
        try await replaceHubRegistrations(registrations, removing: previous.map(\.id).filter { !kept.contains($0) })
    }

    /// Writes an installation's registrations and drops the ones it no longer has, in one
    /// transaction: a crash leaves the old installation or the new one, never a mix.
    package func replaceHubRegistrations(_ written: [Registration], removing stale: [RegistrationID]) async throws(GatewayError) {
        let time = now()
        try await stored { () throws(StoreError) in try await store.replace(written, removing: stale, app: appID, now: time) }
    }
}
