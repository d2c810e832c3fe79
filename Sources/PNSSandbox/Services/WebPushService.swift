import Crypto
import Foundation
import JWTKit
import Pushgate

/// A Web Push service as Mozilla's autopush runs one (RFC 8030): `POST /wpush/<token>` with an
/// aes128gcm-encrypted body (RFC 8291) and a VAPID token (RFC 8292), over HTTP/2 or HTTP/1.1.
/// Every delivery is checked as autopush checks it (the VAPID signature, `aud`, `exp`, `sub`, the
/// `TTL` header, the content coding, the record) and decrypted with the subscription's private
/// key: the inbox holds the plain text. Errors are autopush's JSON
/// (`{"code", "errno", "error", "message", "more_info"}`).
///
/// Beside it, on the same listener, a UnifiedPush distributor as ntfy runs one (`/up/<token>`):
/// `GET` answers the discovery document `{"unifiedpush":{"version":1}}`; `POST` takes a message
/// without VAPID (checked when it comes, and required for a subscription made with
/// `"vapid": true`), answers 200 with ntfy's message JSON, 507 (ntfy's 50701) when the device has
/// no active subscriber (uninstalled), 410 when its endpoint expired, 404 for an unknown endpoint;
/// errors are ntfy's JSON (`{"code", "http", "error"}`).
struct WebPushService: SandboxHTTPResponder {
    let state: SandboxState
    let credentials: SandboxCredentials
    /// This service's origin (`https://127.0.0.1:PORT`): the `aud` a VAPID token must name.
    let origin: String
    let keys: JWTKeyCollection

    static let pathPrefix = "/wpush/"
    /// Where the UnifiedPush distributor's endpoints are.
    static let unifiedPushPrefix = "/up/"

    init(state: SandboxState, credentials: SandboxCredentials, origin: String) async throws {
        self.state = state
        self.credentials = credentials
        self.origin = origin
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try Self.publicKey(credentials.vapidPublicKey))
    }

    static func publicKey(_ base64URL: String) throws -> ES256PublicKey {
        guard let point = Base64URL.decode(base64URL) else { throw WebPushSandboxError.badKey }
        return try ES256PublicKey(backing: try P256.Signing.PublicKey(x963Representation: point))
    }

    func respond(to request: SandboxHTTPRequest) async -> SandboxHTTPResponse {
        var padding = 0
        let unifiedPush = request.path.hasPrefix(Self.unifiedPushPrefix)
        let response = await (unifiedPush ? distribute(request, padding: &padding) : send(request, padding: &padding)).padded(padding)
        state.count(unifiedPush ? "unifiedpush" : "browser", status: response.status)
        return response
    }

    /// autopush's error answer.
    static func error(_ status: Int, errno: Int, _ message: String, headers: [HTTPHeader] = []) -> SandboxHTTPResponse {
        let reason =
            switch status {
            case 400: "Bad Request"
            case 401: "Unauthorized"
            case 403: "Forbidden"
            case 404: "Not Found"
            case 410: "Gone"
            case 413: "Payload Too Large"
            case 415: "Unsupported Media Type"
            case 429: "Too Many Requests"
            default: "Error"
            }
        return .json(
            status,
            #"{"code":\#(status),"errno":\#(errno),"error":"\#(reason)","message":\#(Escaping.jsonString(message)),"more_info":"https://mozilla-services.github.io/autopush-rs/errors.html"}"#,
            headers: headers)
    }

    /// ntfy's error answer: `{"code": <status><2 digits>, "http": <status>, "error": "…"}`.
    static func ntfyError(_ status: Int, code: Int? = nil, _ message: String, headers: [HTTPHeader] = []) -> SandboxHTTPResponse {
        .json(
            status, #"{"code":\#(code ?? status * 100),"http":\#(status),"error":\#(Escaping.jsonString(message))}"#, headers: headers)
    }

    /// The answer to `request` at autopush; `padding` is set when a fault asks for it to be padded.
    private func send(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        guard request.method == "POST" else { return Self.error(405, errno: 999, "Method not allowed") }
        let endpoint = origin + request.path
        guard request.path.hasPrefix(Self.pathPrefix), let subscription = state.webPushSubscription(endpoint: endpoint),
            let device = state.lookUp(handle: endpoint)
        else {
            return Self.error(404, errno: 102, "Request did not validate invalid token")
        }
        if let action = state.takeFault(service: .browser, handle: device.handle) {
            if case .respond(let status, let reason, let retryAfter) = action {
                return Self.error(
                    status, errno: 999, reason ?? "Injected fault",
                    headers: retryAfter.map { [HTTPHeader(name: "Retry-After", value: String($0))] } ?? [])
            }
            if let response = await GoogleService.apply(action, padding: &padding) { return response }
        }
        if let problem = await checkVAPID(request) { return Self.error(401, errno: 109, problem) }
        guard device.status == .active else {
            return Self.error(410, errno: 106, "Request did not validate Subscription is no longer valid")
        }
        let received: Received
        switch receive(request, keys: subscription, device: device) {
        case .success(let value): received = value
        case .failure(let refusal):
            return Self.error(refusal.status, errno: refusal.errno, refusal.message)
        }
        return SandboxHTTPResponse(
            status: 201,
            headers: [
                HTTPHeader(name: "Location", value: "\(origin)/m/\(received.messageID)"),
                HTTPHeader(name: "TTL", value: String(received.ttl)),
            ])
    }

    /// The answer to `request` at the UnifiedPush distributor (ntfy's behaviour).
    private func distribute(_ request: SandboxHTTPRequest, padding: inout Int) async -> SandboxHTTPResponse {
        // ntfy answers the discovery document for any topic it serves.
        if request.method == "GET" { return .json(200, UnifiedPushWire.discoveryAnswer) }
        guard request.method == "POST" else { return Self.ntfyError(405, "method not allowed") }
        let endpoint = origin + request.path
        guard let subscription = state.webPushSubscription(endpoint: endpoint), let device = state.lookUp(handle: endpoint) else {
            return Self.ntfyError(404, code: 40401, "page not found")
        }
        if let action = state.takeFault(service: .unifiedpush, handle: device.handle) {
            if case .respond(let status, let reason, let retryAfter) = action {
                return Self.ntfyError(
                    status, reason ?? "injected fault",
                    headers: retryAfter.map { [HTTPHeader(name: "Retry-After", value: String($0))] } ?? [])
            }
            if let response = await GoogleService.apply(action, padding: &padding) { return response }
        }
        // VAPID is optional (ntfy takes messages without it); a subscription made with the
        // app's key wants it, and a token that comes is checked.
        let wantsVAPID = WebPushSubscription(handleValue: device.handle)?.vapid ?? false
        if wantsVAPID || request.header("Authorization") != nil, let problem = await checkVAPID(request) {
            return Self.ntfyError(401, code: 40101, "unauthorized: \(problem)")
        }
        switch device.status {
        case .active: break
        case .uninstalled:
            return Self.ntfyError(507, code: 50701, "cannot publish to UnifiedPush topic without previously active subscriber")
        case .expired: return Self.ntfyError(410, code: 41001, "the endpoint is gone")
        }
        switch receive(request, keys: subscription, device: device) {
        case .success(let received):
            return .json(
                200,
                #"{"id":"\#(received.messageID)","time":\#(Int(state.clock.now.secondsSinceEpoch)),"event":"message","topic":"up"}"#)
        case .failure(let refusal):
            return Self.ntfyError(refusal.status, refusal.message)
        }
    }

    /// What a delivery left: the message's id and its time to live.
    private struct Received {
        var messageID: String
        var ttl: Int
    }

    /// Why a message is refused: its status, autopush's errno and the words.
    private struct Refusal: Error {
        var status: Int
        var errno: Int
        var message: String
    }

    /// The checks both modes make of a message (its size, `TTL`, `Urgency`, `Topic`, content
    /// coding), then its decryption into the device's inbox.
    private func receive(
        _ request: SandboxHTTPRequest, keys subscription: SandboxWebPushKeys, device: SandboxDevice
    ) -> Result<
        Received, Refusal
    > {
        if request.bodyTooLarge || request.body.count > ServiceLimits.webPushBodyBytes {
            return .failure(
                Refusal(
                    status: 413, errno: 104,
                    message:
                        "This message is intended for a constrained device and is limited in size. Converted buffer is too long by \(request.body.count - ServiceLimits.webPushBodyBytes) bytes"
                ))
        }
        // autopush: a TTL missing or not a whole number is errno 111.
        guard let ttl = request.header("TTL").flatMap({ Int($0) }), ttl >= 0 else {
            return .failure(Refusal(status: 400, errno: 111, message: "Missing TTL value"))
        }
        if let urgency = request.header("Urgency"), !["very-low", "low", "normal", "high"].contains(urgency) {
            return .failure(Refusal(status: 400, errno: 114, message: "Invalid Urgency header value"))
        }
        if let topic = request.header("Topic"),
            topic.utf8.count > 32 || !topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        {
            return .failure(
                Refusal(
                    status: 400, errno: 113, message: "Topic must be no greater than 32 characters and use the URL-safe base64 alphabet"))
        }
        var payload = ""
        if !request.body.isEmpty {
            guard request.header("Content-Encoding")?.lowercased() == "aes128gcm" else {
                return .failure(Refusal(status: 400, errno: 110, message: "Unknown Content-Encoding"))
            }
            do {
                payload = String(decoding: try WebPushDecryption.decrypt(request.body, subscription: subscription), as: UTF8.self)
            } catch {
                return .failure(Refusal(status: 400, errno: 110, message: "Invalid crypto: \(error)"))
            }
        }
        let messageID = SandboxCredentials.randomToken(40)
        state.deliver(
            deviceID: device.id,
            state.keepsInboxes
                ? ReceivedNotification(
                    platform: device.platform, deviceID: device.id, messageID: messageID,
                    // The authorization's scheme only (`vapid`), to tell a signed message from one that was not.
                    headers: request.headers.filter { header in
                        ["ttl", "urgency", "topic", "content-encoding"].contains(header.name.lowercased())
                    }
                        + (request.header("Authorization").map {
                            [HTTPHeader(name: "Authorization", value: String($0.prefix { $0 != " " }).lowercased())]
                        } ?? []), payload: payload, receivedAt: state.clock.now.secondsSinceEpoch) : nil)
        return .success(Received(messageID: messageID, ttl: ttl))
    }

    /// Why the request's VAPID authorization fails, or nil: `vapid t=<JWT>, k=<key>` (RFC 8292),
    /// the key the subscription was made with, an ES256 signature by it, `aud` this origin, `exp`
    /// in the future and at most 24 hours ahead, `sub` (when there is one) a `mailto:` or
    /// `https:` contact. The messages are autopush's.
    private func checkVAPID(_ request: SandboxHTTPRequest) async -> String? {
        guard let authorization = request.header("Authorization") else { return "Missing Authorization header" }
        let lowered = authorization.lowercased()
        guard lowered.hasPrefix("vapid ") else { return "Invalid Authorization header: the scheme must be vapid (RFC 8292)" }
        var parameters: [String: String] = [:]
        for part in authorization.dropFirst("vapid ".count).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            parameters[pair[0].trimmingCharacters(in: .whitespaces).lowercased()] = pair[1].trimmingCharacters(in: .whitespaces)
        }
        guard let token = parameters["t"], let key = parameters["k"] else { return "Invalid Authorization header: t= and k= are required" }
        guard Base64URL.decode(key) == Base64URL.decode(credentials.vapidPublicKey) else { return "VAPID public key mismatch" }
        guard APNSAuthenticator.decodeSegment(token, 0)?["alg"]?.stringValue == "ES256" else {
            return "InvalidAlgorithm: the token must be ES256"
        }
        let claims: VAPIDClaims
        do {
            claims = try await VAPIDClaims.verified(token, keys: keys)
        } catch {
            return "InvalidSignature"
        }
        guard claims.aud == origin else { return "Invalid VAPID audience" }
        let now = state.clock.now.secondsSinceEpoch
        guard claims.exp > now else { return "ExpiredSignature" }
        guard claims.exp <= now + 24 * 3600 + SandboxAssumptions.webPushClockSkewSeconds else {
            return "The VAPID token expiration is too long"
        }
        // RFC 8292 makes `sub` optional and autopush accepts a token without one; one that is
        // there must be a contact.
        if let subject = claims.sub?.lowercased(), !(subject.hasPrefix("mailto:") || subject.hasPrefix("https:")) {
            return "Invalid VAPID sub: a mailto: or https: contact is expected"
        }
        return nil
    }
}

enum WebPushSandboxError: Error, CustomStringConvertible {
    case badKey
    case malformed(String)

    var description: String {
        switch self {
        case .badKey: "the key is not an uncompressed P-256 point in base64url"
        case .malformed(let reason): reason
        }
    }
}

/// The claims of a VAPID token, read after its signature is verified.
struct VAPIDClaims {
    var aud: String
    var exp: Double
    var sub: String?

    /// The claims of `token` once JWTKit has verified its ES256 signature with `keys` (read as
    /// plain JSON after that: `sub` is optional, and `exp` a number).
    static func verified(_ token: String, keys: JWTKeyCollection) async throws -> VAPIDClaims {
        _ = try await keys.verify(token, as: VAPIDPayload.self)
        guard let payload = APNSAuthenticator.decodeSegment(token, 1), let aud = payload["aud"]?.stringValue,
            case .number(let expText)? = payload["exp"]?.kind, let exp = Double(expText)
        else { throw WebPushSandboxError.malformed("the claims must hold aud and exp") }
        return VAPIDClaims(aud: aud, exp: exp, sub: payload["sub"]?.stringValue)
    }
}

struct VAPIDPayload: JWTPayload {
    var aud: String
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// RFC 8291 on the receiving side: the user agent's decryption of an aes128gcm body with the
/// subscription's private key and auth secret.
package enum WebPushDecryption {
    package static func decrypt(_ body: [UInt8], subscription: SandboxWebPushKeys) throws -> [UInt8] {
        // The header: salt (16), record size (4), key id length (1), key id (the sender's key).
        guard body.count >= 21 else { throw WebPushSandboxError.malformed("the body is shorter than the aes128gcm header") }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17 else {
            throw WebPushSandboxError.malformed("the key id must be the sender's 65-byte P-256 key")
        }
        let senderKey = Array(body[21..<86])
        let ciphertext = Array(body[86...])
        guard recordSize >= 18, ciphertext.count <= recordSize else {
            throw WebPushSandboxError.malformed("one record of at most rs \(recordSize) bytes expected, found \(ciphertext.count)")
        }
        let privateKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: subscription.privateKey)
        let sender = try P256.KeyAgreement.PublicKey(x963Representation: senderKey)
        let shared = try privateKey.sharedSecretFromKeyAgreement(with: sender)
        let keyInfo = Array("WebPush: info".utf8) + [0] + Array(privateKey.publicKey.x963Representation) + senderKey
        let inputKey = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: subscription.auth, sharedInfo: keyInfo, outputByteCount: 32)
        let contentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }), ciphertext: ciphertext.dropLast(16),
            tag: ciphertext.suffix(16))
        var plain = Array(try AES.GCM.open(box, using: contentKey))
        // The padding: zeros after the delimiter, 2 for the last (here the only) record.
        while plain.last == 0 { plain.removeLast() }
        guard plain.last == 2 else { throw WebPushSandboxError.malformed("the record does not end with the last-record delimiter 0x02") }
        plain.removeLast()
        return plain
    }
}

/// A sandbox browser's subscription secrets: its P-256 private key and the auth secret.
package struct SandboxWebPushKeys: Sendable {
    var privateKey: [UInt8]
    var auth: [UInt8]

    package init(privateKey: [UInt8], auth: [UInt8]) {
        self.privateKey = privateKey
        self.auth = auth
    }
}
