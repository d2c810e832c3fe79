import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Pushgate
import PushgateGateway
import PushgateXML

extension HubHTTP {
    // MARK: Registrations

    static func registrationID(_ text: String) throws(GatewayError) -> RegistrationID {
        do { return try RegistrationID(text) } catch { throw .badRequest("registration id: \(error.description)") }
    }

    static func existing(_ id: RegistrationID, call: HubCall) async throws(GatewayError) -> Registration? {
        try await call.gateway.installations.registration(id)
    }

    /// Validates a description and writes it: tags as Notification Hubs checks them (a Listen
    /// key may not set a `username:` tag), the handle as its service issues it, a template body
    /// as the gateway compiles it. Nothing is written when any part is wrong.
    static func upsert(
        _ description: HubRegistrationXML.Description, id: RegistrationID, call: HubCall, expected: String?
    ) async throws(GatewayError) -> Registration {
        let gateway = call.gateway
        let handle: DeviceHandle
        do { handle = try gateway.app.configuration.handles.validate(description.handle, for: description.platform) } catch {
            throw .badRequest(
                "\(HubRegistrationXML.types.first { $0.platform == description.platform }!.handleElement): \(error.description)")
        }
        let tags = try Installations.hubTags(description.tags, writer: call.writer, field: "Tags")
        var template: RegistrationTemplate?
        if description.isTemplate, let body = description.bodyTemplate {
            var headers = description.wnsHeaders
            if let expiry = description.expiry, !expiry.isEmpty {
                // Stored as the template's apns-expiration: seconds since 1970 (0: at once).
                guard description.platform == .apns, UInt32(expiry) != nil else {
                    throw .badRequest("Expiry: '\(expiry.prefix(40))' must be seconds since 1970, on an Apple template registration")
                }
                headers["apns-expiration"] = expiry
            }
            let candidate = RegistrationTemplate(
                name: description.templateName, body: HubTemplates.stored(body, for: description.platform),
                headers: headers)
            do { _ = try candidate.compiled(for: description.platform) } catch {
                throw .badRequest("BodyTemplate: \(error.description)")
            }
            template = candidate
        }
        let registration: Registration
        do {
            registration = try Registration(
                app: gateway.appID, id: id, handle: handle, tags: tags, template: template, expiresAt: description.expiration,
                owner: .hub)
        } catch {
            throw .badRequest("Tags: \(error.description)")
        }
        try await gateway.installations.writeRegistration(registration, writer: call.writer, ifMatch: expected, client: call.client)
        return registration
    }

    /// A registration as an Atom entry; `masked` for a read with a Listen key (``HubCall/readsMasked``).
    static func entry(_ registration: Registration, call: HubCall, masked: Bool = false) -> EditedResponse<XMLAnswer> {
        let document = HubRegistrationXML.entry(
            registration, base: call.base, apiVersion: call.apiVersion, now: call.gateway.installations.now(), masked: masked)
        return EditedResponse(
            headers: [etagHeader: "W/\"\(registrationETag(registration))\""],
            response: XMLAnswer(document, contentType: "application/atom+xml;type=entry;charset=utf-8"))
    }

    /// `GET /{hub}/registrations` (`$filter`, `$top`, continuation) and `GET /{hub}/tags/{tag}/registrations`.
    static func list(_ request: Request, call: HubCall, tag: String?) async throws(GatewayError) -> EditedResponse<XMLAnswer> {
        let gateway = call.gateway
        // Names decoded as values are: `%24filter` is `$filter`; a name the listing does not take
        // (a misspelled `$filter`) is a 400 naming it, never a silent listing of everything.
        let query = try QueryParameters(
            request.uri, accepting: ["api-version", "$filter", "$top", "ContinuationToken", "continuationtoken", "continuationToken"])
        let topText = query.get("$top") ?? "100"
        guard let top = Int(topText), (1...100).contains(top) else { throw .badRequest("$top: '\(topText.prefix(20))' must be 1 to 100") }
        var after: RegistrationID?
        if let token = request.headers[continuationHeader] ?? query.get("ContinuationToken") ?? query.get("continuationtoken")
            ?? query.get("continuationToken")
        {
            guard let id = ContinuationToken.registrationID(token) else {
                throw .badRequest("X-MS-ContinuationToken: '\(token.prefix(40))' is not one this hub issued")
            }
            after = id
        }
        var expression: TagExpression?
        var handleFilter: String?
        if let tag {
            do { expression = .tag(try Tag(tag)) } catch { throw .badRequest("tag: \(error.description)") }
        } else if let filter = query.get("$filter") {
            let parsed: RegistrationFilter
            do { parsed = try RegistrationFilter(parsing: filter) } catch { throw .badRequest(error.description) }
            // Every platform's handle element filters by handle (generated: a new platform's too).
            let handleFields = Platform.hubPlatforms.map(\.notificationHubs.handleElement)
            switch parsed.field {
            case "tags":
                do { expression = .tag(try Tag(parsed.value)) } catch { throw .badRequest("$filter: \(error.description)") }
            case let field where handleFields.contains(where: { $0.lowercased() == field }):
                handleFilter = parsed.value
            default:
                throw .badRequest(
                    "$filter: '\(parsed.field)' is not filterable; use "
                        + (["Tags"] + handleFields).joined(separator: ", "))
            }
        }
        let found =
            if let handle = handleFilter {
                try await gateway.installations.registrations(handle: handle, after: after, limit: top)
            } else {
                try await gateway.installations.registrationPage(matching: expression, after: after, limit: top)
            }
        let document = HubRegistrationXML.feed(
            found, base: call.base, collection: tag.map { "tags/\(SharedAccessSignature.formEncode($0))/registrations" } ?? "registrations",
            apiVersion: call.apiVersion, now: gateway.installations.now())
        var headers = HTTPFields()
        if found.count == top, let last = found.last { headers[continuationHeader] = ContinuationToken.token(after: last.id) }
        return EditedResponse(headers: headers, response: XMLAnswer(document, contentType: "application/atom+xml;type=feed;charset=utf-8"))
    }
}
