import Crypto
import Foundation
import Pushgate

/// The hub API's registration rules, in the core beside the tutorial API's: who may write what,
/// `If-Match`, the writes themselves. The hub's HTTP layer parses Atom and JSON and answers;
/// it does not reach the store.
extension Installations {
    /// Who writes through the hub API, as the key's rights say.
    public enum HubWriter: Sendable, Hashable {
        /// A key with only the Listen right: what every copy of an app carries.
        case device
        /// A key with the Send or Manage right: the app's backend.
        case backend

        var tagWriter: TagPolicy.Writer { self == .backend ? .hubBackend : .hubDevice }
    }

    /// Supplied tags as ``TagPolicy`` checks them for `writer`, `field` naming where they were.
    package static func hubTags(_ texts: [String], writer: HubWriter, field: String) throws(GatewayError) -> [Tag] {
        do { return try TagPolicy.check(texts, writer: writer.tagWriter) } catch {
            throw GatewayError(error.isForbidden ? .forbidden : .invalid, "\(field): \(error.description)")
        }
    }

    /// A registration of this hub, if it exists.
    package func registration(_ id: RegistrationID) async throws(GatewayError) -> Registration? {
        try await storeCall { () throws(StoreError) in try await store.registration(id: id, app: appID) }
    }

    /// A fresh registration id (`POST /{hub}/registrationIDs`), reserved for the key `rule`: each
    /// key of a hub holds at most `limits.maxHubReservationsPerKey` unused ids, for
    /// `limits.hubReservationLifetimeSeconds` each, and one client address (`client`) reserves
    /// them at most at `limits.hubReservationsPerSecond` per key (429 with `Retry-After` past it):
    /// one device flooding the Listen key cannot starve the others.
    package func reserveRegistrationID(rule: String, client: String) async throws(GatewayError) -> RegistrationID {
        let time = now()
        let (owner, limit) = (RegistrationOwner.hubKeyReservation(rule: rule), limits.maximumHubReservationsPerKey)
        if case .wait(let seconds) = reservationRate.withLock({ $0.take(rule + "\n" + client, now: time.secondsSinceEpoch) }) {
            throw GatewayError(
                .tooManyRequests,
                "this client reserves registration ids with the key '\(rule)' at most \(limits.hubReservationsPerSecond)/s "
                    + "(limits.hubReservationsPerSecond, burst \(limits.hubReservationBurst)); retry in \(seconds) s",
                retryAfterSeconds: seconds)
        }
        let lifetime = Double(limits.hubReservationLifetimeSeconds)
        return try await storeCall { () throws(StoreError) in
            try await store.createRegistrationID(app: appID, owner: owner, maximumReserved: limit, lifetime: lifetime, now: time)
        }
    }

    /// Writes `registration` (made by the hub API, owned by the hub): a user's registration
    /// (made through the authenticated `/api/register`) is out of a device key's reach, an id a
    /// user reserved is that user's (409), and `ifMatch`, when given, must name the current ETag.
    /// A new registration counts against the hub's device quota and, for a device key, against
    /// what one client address may create (``admitCreation(writer:client:)``). What the rules read
    /// is what is written over (``HubWrite``): a write that lost a race decides again.
    package func writeRegistration(
        _ registration: Registration, writer: HubWriter, ifMatch: String?, client: String
    ) async throws(GatewayError) {
        var admitted = false
        for _ in 0..<Self.writeAttempts {
            let current = try await self.registration(registration.id)
            if let current {
                try Self.checkHubOwner(current, writer: writer)
                try Self.checkBinding(of: current, writer: writer, change: .registrationWrite)
            }
            if ifMatch != nil { try Self.checkIfMatch(ifMatch, current) }
            if current == nil, !admitted {
                try await admitCreation(writer: writer, client: client)
                admitted = true
            }
            let write = HubWrite(app: appID, registrations: [registration], expected: [registration.id: current])
            if try await commit(write) { return }
        }
        throw Self.keptChanging("registration \(registration.id.rawValue)")
    }

    /// Deletes a registration by the same rules as ``writeRegistration(_:writer:ifMatch:client:)``.
    package func deleteRegistration(_ id: RegistrationID, writer: HubWriter, ifMatch: String?) async throws(GatewayError) {
        for _ in 0..<Self.writeAttempts {
            guard let registration = try await registration(id) else { throw .notFound("no registration \(id.rawValue)") }
            try Self.checkIfMatch(ifMatch, registration)
            try Self.checkHubOwner(registration, writer: writer)
            try Self.checkBinding(of: registration, writer: writer, change: .registrationDelete)
            if try await commit(HubWrite(app: appID, registrations: [], removing: [id], expected: [id: registration])) { return }
        }
        throw Self.keptChanging("registration \(id.rawValue)")
    }

    /// How often a hub write reads and decides again when what it read changed meanwhile.
    static let writeAttempts = 3

    /// The refusal of a write whose registrations kept changing under it.
    static func keptChanging(_ what: String) -> GatewayError {
        GatewayError(.conflict, "\(what) kept changing while it was being written (\(writeAttempts) tries); try again")
    }

    /// Writes `write`; false when a registration it read changed before it was written.
    func commit(_ write: HubWrite) async throws(GatewayError) -> Bool {
        do {
            try await store.write(write, now: now())
            return true
        } catch {
            if error.kind == .changed { return false }
            throw Gateway.storeFailure(error)
        }
    }

    /// A user's registration is theirs: a device key may not replace or delete it.
    static func checkHubOwner(_ registration: Registration, writer: HubWriter) throws(GatewayError) {
        guard registration.owner != .hub, writer == .device else { return }
        throw GatewayError(
            .forbidden,
            "registration \(registration.id.rawValue) belongs to a user (registered by that user); a Listen key may not change it")
    }

    /// What a write does to a registration that may belong to an installation bound to a user.
    enum BoundChange {
        case registrationWrite, registrationDelete, installationDelete
        /// An installation written again: the user it names and its push channel.
        case installationWrite(userID: String?, channel: String)
    }

    /// The user a registration is bound to: the `userId` of the installation it belongs to (its
    /// `$UserId:{…}` tag), set by the backend.
    package static func boundUser(of registration: Registration) -> String? {
        for tag in registration.tags where tag.rawValue.hasPrefix("$UserId:{") && tag.rawValue.hasSuffix("}") {
            return String(tag.rawValue.dropFirst("$UserId:{".count).dropLast())
        }
        return nil
    }

    /// The one rule of bound installations: once the backend (a Send or Manage key) has bound an
    /// installation to a user, a Listen key may not unbind it, rebind it, point it at another push
    /// channel or delete it, through the installation routes or the registration routes (its
    /// registrations are registrations too). Whoever could would receive that user's sends.
    /// A Listen key may write the installation again unchanged in those respects (tags,
    /// templates); unbinding and channel renewal go through the backend.
    static func checkBinding(of current: Registration, writer: HubWriter, change: BoundChange) throws(GatewayError) {
        guard writer == .device, let user = boundUser(of: current) else { return }
        let what = "registration \(current.id.rawValue) belongs to an installation bound to a user (userId)"
        switch change {
        case .registrationWrite:
            throw GatewayError(.forbidden, "\(what); a Listen key may not change it (write the installation, or use a Send or Manage key)")
        case .registrationDelete, .installationDelete:
            throw GatewayError(.forbidden, "\(what); a Listen key may not delete it (a Send or Manage key may)")
        case .installationWrite(let userID, let channel):
            if userID != user {
                throw GatewayError(
                    .forbidden,
                    "userId: the installation is bound to a user; a Listen key may not \(userID == nil ? "remove" : "change") its userId (a Send or Manage key may)"
                )
            }
            if channel != current.handle.value {
                throw GatewayError(
                    .forbidden,
                    "pushChannel: the installation is bound to a user (userId); its push channel may be replaced only with a Send or Manage key"
                )
            }
        }
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
    package func registrations(handle: String, after: RegistrationID?, limit: Int) async throws(GatewayError) -> [Registration] {
        var ids = try await tutorialRegistrations.ids(holding: handle)
        if ids.isEmpty, handle.allSatisfy(\.isHexDigit) {
            let lowered = handle.lowercased()
            ids = try await storeCall { () throws(StoreError) in try await store.registrationIDs(handle: lowered, app: appID) }
        }
        var found: [Registration] = []
        for id in ids.sorted().filter({ after == nil || $0 > after! }).prefix(limit) {
            if let registration = try await registration(id) { found.append(registration) }
        }
        return found
    }

    /// The hub's registrations matching `expression` (every one when nil) after `after`, at most
    /// `limit`, by id: one page of a listing.
    package func registrationPage(
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

    /// Every registration of installation `id` (its native one and one per template), found by
    /// the `$InstallationId:{id}` tag they all carry.
    package func registrations(ofInstallation id: String) async throws(GatewayError) -> [Registration] {
        let tag: Tag
        do { tag = try Tag("$InstallationId:{\(id)}") } catch { throw .badRequest(error.description) }
        return try await registrations(tagged: tag)
    }

    /// Every registration carrying `tag` (an installation's: its native one and one per template).
    package func registrations(tagged tag: Tag) async throws(GatewayError) -> [Registration] {
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
    ///   receives: a device key may keep the `userId` a backend set, not choose one;
    /// - and once bound, a device key may neither drop nor change it, nor point the installation
    ///   at another push channel (``checkBinding(of:writer:change:)``).
    ///
    /// What the rules read is what is written over, in one transaction (``HubWrite``): a device
    /// key's write racing a backend's bind decides again on the bound installation, so it cannot
    /// drop the binding. A new installation counts as ``writeRegistration(_:writer:ifMatch:client:)``'s
    /// new registration does.
    package func writeInstallation(
        _ id: String, registrations: [Registration], userID: String?, writer: HubWriter, client: String
    ) async throws(GatewayError) {
        guard let native = registrations.first else { return }
        var admitted = false
        for _ in 0..<Self.writeAttempts {
            let previous = try await self.registrations(ofInstallation: id)
            let previousNative = try await self.registration(native.id)
            if let previousNative {
                try Self.checkBinding(
                    of: previousNative, writer: writer, change: .installationWrite(userID: userID, channel: native.handle.value))
            }
            if let userID, writer == .device, previousNative.flatMap(Self.boundUser(of:)) != userID {
                throw GatewayError(
                    .forbidden,
                    "userId: '\(userID.prefix(60))' may be set only with a Send or Manage key; a Listen key may keep the installation's userId (whoever sets it receives that user's notifications)"
                )
            }
            if previousNative == nil, !admitted {
                try await admitCreation(writer: writer, client: client)
                admitted = true
            }
            let kept = Set(registrations.map(\.id))
            var expected: [RegistrationID: Registration?] = [native.id: previousNative]
            for registration in previous { expected[registration.id] = registration }
            let write = HubWrite(
                app: appID, registrations: registrations, removing: previous.map(\.id).filter { !kept.contains($0) }, expected: expected)
            if try await commit(write) { return }
        }
        throw Self.keptChanging("installation \(id.prefix(60))")
    }

    /// Deletes installation `id` (its native registration and its templates' ones); a no-op when
    /// it does not exist. A Listen key may not delete one bound to a user (``checkBinding``).
    package func deleteInstallation(_ id: String, writer: HubWriter) async throws(GatewayError) {
        for _ in 0..<Self.writeAttempts {
            let registrations = try await registrations(ofInstallation: id)
            for registration in registrations { try Self.checkBinding(of: registration, writer: writer, change: .installationDelete) }
            let write = HubWrite(
                app: appID, registrations: [], removing: registrations.map(\.id),
                expected: Dictionary(uniqueKeysWithValues: registrations.map { ($0.id, Optional($0)) }))
            if try await commit(write) { return }
        }
        throw Self.keptChanging("installation \(id.prefix(60))")
    }
}

/// The ETag of a registration: an integer, as Notification Hubs writes it, taken from a digest of
/// what the registration holds, so that it changes with every update that changes something
/// (NH counts updates from 1; clients only compare ETags for equality, in `If-Match`).
public func registrationETag(_ registration: Registration) -> String {
    var text =
        "\(registration.platform.rawValue)\n\(registration.handle.value)\n\(registration.tags.map(\.rawValue).joined(separator: ","))\n"
    text += "\(registration.expiresAt?.secondsSinceEpoch ?? 0)\n"
    if let template = registration.template {
        text += "\(template.name ?? "")\n\(template.body)\n"
        for (name, value) in template.headers.sorted(by: { $0.key < $1.key }) { text += "\(name):\(value)\n" }
    }
    let digest = SHA256.hash(data: Data(text.utf8))
    // 6 bytes: at most 2^48, exact in a JSON number or a double.
    return String(digest.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
}
