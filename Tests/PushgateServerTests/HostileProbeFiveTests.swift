import Foundation
import Pushgate
import PushgateConfig
import PushgateCurl
import PushgateDispatch
import PushgateGateway
import PushgateServer
import PushgateTesting
import Synchronization
import Testing

/// What the fifth hostile probe found, each made again through the router on the in-memory
/// gateway and now refused: a blank tag header that broadcast, errors that echoed 26 KB, an id a
/// user reserved taken through the hub API, the Listen key storing without bound and starving
/// other devices of ids, one user filling the disk, a device key's write racing a backend's bind.
@Suite struct HostileProbeFiveTests {
    static func limits(_ values: [String: Int]) -> @Sendable (inout [String: Any]) -> Void {
        { config in
            var limits = config["limits"] as? [String: Any] ?? [:]
            for (name, value) in values { limits[name] = value }
            config["limits"] = limits
        }
    }

    static let appleBody = #"{"aps":{"alert":"hi"}}"#

    static func appleEntry(_ token: String, tags: String = "news") -> String {
        HubAPITests.appleRegistration(token: token, tags: tags)
    }

    /// Writes registrations `r-0` … with the Full key, each answered 200.
    static func putRegistrations(_ count: Int, _ client: HubAPITests.Client) async throws {
        for index in 0..<count {
            let put = try await client.call("PUT", "registrations/r-\(index)", body: appleEntry(token()), contentType: HubAPITests.atom)
            #expect(put.status == 200, "\(put.bodyText)")
        }
    }

    static func token() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    /// Only an absent `ServiceBusNotification-Tags` sends to every registration, as Notification
    /// Hubs documents it: an empty header, or one of spaces, is a 400 and sends nothing.
    @Test func aBlankTagsHeaderIsRefusedNotABroadcast() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try HubAPITests.Client(fixture)
            let phone = fixture.device(.apns)
            _ = try await fixture.register(phone, user: "alice")
            for blank in ["", "   ", " \t "] {
                let sent = try await client.call(
                    "POST", "messages", body: Self.appleBody,
                    headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", blank)])
                #expect(sent.status == 400, "'\(blank)': \(sent.bodyText)")
                #expect(sent.bodyText.contains("ServiceBusNotification-Tags is present but blank"), "\(sent.bodyText)")
            }
            // Absent: everyone, as before.
            let everyone = try await client.call(
                "POST", "messages", body: Self.appleBody, headers: [("ServiceBusNotification-Format", "apple")])
            #expect(everyone.status == 201, "\(everyone.bodyText)")
            let details = try await client.finalDetails(of: everyone)
            #expect(details.bodyText.contains("<State>Completed</State>"), "\(details.bodyText)")
            #expect(fixture.delivered(to: phone) == 1, "only the broadcast without the header was delivered")
        }
    }

    /// One `Character` may carry any number of combining marks: an error quotes at most its
    /// bytes' worth (600 in all), on the tutorial API and on the hub API before the signature.
    @Test func errorsQuoteInputByBytesNotCharacters() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let combining = "a" + String(repeating: "%CC%81", count: 13_000)
            let tutorial = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=bob&secure=\(combining)", body: #""hi""#)
            #expect(tutorial.status == 400, "\(tutorial.bodyText.prefix(200))")
            #expect(tutorial.body.count < 1_000, "\(tutorial.body.count) bytes")
            let hub = try await fixture.call(
                "GET", "/default/registrations?api-version=\(combining)", user: nil, headers: [("Authorization", "SharedAccessSignature x")]
            )
            #expect(hub.status == 400, "\(hub.bodyText.prefix(200))")
            #expect(hub.body.count < 1_500, "\(hub.body.count) bytes")
            #expect(GatewayError(.invalid, "x" + String(repeating: "\u{301}", count: 13_000)).message.utf8.count <= 620)
        }
    }

    /// An id alice reserved through `/api/register` is hers: neither hub key may write it (409),
    /// and alice's own write then goes through.
    @Test func anIDAUserReservedCannotBeTakenThroughTheHubAPI() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try HubAPITests.Client(fixture)
            let reserved = try await fixture.call("POST", "/api/register?handle=x")
            let id = String(reserved.bodyText.dropFirst().dropLast())
            #expect(reserved.status == 200 && !id.isEmpty, "\(reserved.bodyText)")
            for rule in [SharedAccessRule.defaultFullName, SharedAccessRule.defaultListenName] {
                let taken = try await client.call(
                    "PUT", "registrations/\(id)", body: Self.appleEntry(Self.token()), contentType: HubAPITests.atom,
                    authorization: client.token(rule: rule))
                #expect(taken.status == 409, "\(rule): \(taken.bodyText)")
                #expect(taken.bodyText.contains("reserved by a user"), "\(taken.bodyText)")
            }
            let phone = fixture.device(.apns)
            let own = try await fixture.call(
                "PUT", "/api/register/\(id)", body: #"{"Platform":"apns","Handle":"\#(phone.handle)","Tags":[]}"#)
            #expect(own.status == 200, "\(own.bodyText)")
        }
    }

    /// The Listen key every copy of the app carries creates registrations and installations at a
    /// bounded rate per client address (429 with `Retry-After`), updates are not creations, and a
    /// backend's key is not held by it; another address has its own bucket.
    @Test func aListenKeyCreatesDevicesAtABoundedRatePerClient() async throws {
        let clock = ManualClock()
        try await InMemoryGatewayFixture.with(
            clock: clock, rewrite: Self.limits(["hubDeviceCreationsPerMinute": 1, "hubDeviceCreationBurst": 2])
        ) { fixture in
            let client = try HubAPITests.Client(fixture)
            let listen = client.token(rule: SharedAccessRule.defaultListenName)
            var created: [String] = []
            for _ in 0..<2 {
                let made = try await client.call(
                    "POST", "registrations", body: Self.appleEntry(Self.token()), contentType: HubAPITests.atom, authorization: listen)
                #expect(made.status == 200, "\(made.bodyText)")
                let id = try #require(made.bodyText.range(of: #"<RegistrationId>([^<]+)<"#, options: .regularExpression))
                created.append(String(made.bodyText[id].dropFirst("<RegistrationId>".count).dropLast()))
            }
            let refused = try await client.call(
                "POST", "registrations", body: Self.appleEntry(Self.token()), contentType: HubAPITests.atom, authorization: listen)
            #expect(refused.status == 429 && refused.header("Retry-After") == "60", "\(refused.bodyText)")
            #expect(refused.bodyText.contains("hubDeviceCreationsPerMinute"), "\(refused.bodyText)")
            let installation = #"{"installationId":"i-1","platform":"apns","pushChannel":"\#(Self.token())"}"#
            let refusedInstallation = try await client.call("PUT", "installations/i-1", body: installation, authorization: listen)
            #expect(refusedInstallation.status == 429, "\(refusedInstallation.bodyText)")
            // An update of a registration the device has is no creation.
            let update = try await client.call(
                "PUT", "registrations/\(created[0])", body: Self.appleEntry(Self.token(), tags: "sports"), contentType: HubAPITests.atom,
                authorization: listen)
            #expect(update.status == 200, "\(update.bodyText)")
            // The backend's key creates as it needs.
            #expect(try await client.call("PUT", "installations/i-1", body: installation).status == 200)
            // Another client address has a bucket of its own; this one refills.
            try await fixture.gateway.installations.admitCreation(writer: .device, client: "203.0.113.9")
            clock.advance(seconds: 60)
            let later = try await client.call(
                "POST", "registrations", body: Self.appleEntry(Self.token()), contentType: HubAPITests.atom, authorization: listen)
            #expect(later.status == 200, "\(later.bodyText)")
        }
    }

    /// A hub holds at most its quota of active devices: one more is refused with 403 naming the
    /// quota, as Notification Hubs refuses past its tier's; updates go on.
    @Test func aHubHasAQuotaOfActiveDevices() async throws {
        try await InMemoryGatewayFixture.with(rewrite: Self.limits(["maxHubDevices": 3])) { fixture in
            let client = try HubAPITests.Client(fixture)
            try await Self.putRegistrations(3, client)
            let refused = try await client.call(
                "PUT", "registrations/r-3", body: Self.appleEntry(Self.token()), contentType: HubAPITests.atom)
            #expect(refused.status == 403, "\(refused.bodyText)")
            #expect(refused.bodyText.contains("QuotaExceeded") && refused.bodyText.contains("maxHubDevices"), "\(refused.bodyText)")
            let installation = #"{"installationId":"i-9","platform":"apns","pushChannel":"\#(Self.token())"}"#
            #expect(try await client.call("PUT", "installations/i-9", body: installation).status == 403)
            #expect(
                try await client.call(
                    "PUT", "registrations/r-0", body: Self.appleEntry(Self.token(), tags: "x"), contentType: HubAPITests.atom
                ).status == 200)
            #expect(try await fixture.store.registrationCount(app: .default, upTo: 100) == 3)
        }
    }

    /// Ids reserved through the hub API are rated per client address, not per key: a flood from
    /// one device leaves the others their ids; and unused ones expire within the hour, so the
    /// key's cap cannot be held for a day.
    @Test func hubReservationsAreRatedPerClientAndExpireWithinTheHour() async throws {
        let clock = ManualClock()
        try await InMemoryGatewayFixture.with(
            clock: clock, rewrite: Self.limits(["hubReservationsPerSecond": 1, "hubReservationBurst": 2, "maxHubReservationsPerKey": 4])
        ) { fixture in
            let installations = fixture.gateway.installations
            let listen = SharedAccessRule.defaultListenName
            for _ in 0..<2 { _ = try await installations.reserveRegistrationID(rule: listen, client: "198.51.100.1") }
            do {
                _ = try await installations.reserveRegistrationID(rule: listen, client: "198.51.100.1")
                Issue.record("the flooding client got a third id in its burst of 2")
            } catch {
                #expect((error as? GatewayError)?.kind == .tooManyRequests && (error as? GatewayError)?.retryAfterSeconds == 1, "\(error)")
            }
            // Another device behind another address is not held back.
            for _ in 0..<2 { _ = try await installations.reserveRegistrationID(rule: listen, client: "198.51.100.2") }
            // The key's cap (4) is full; an hour later the unused ids have expired.
            clock.advance(seconds: 30)
            do {
                _ = try await installations.reserveRegistrationID(rule: listen, client: "198.51.100.3")
                Issue.record("a fifth unused id was reserved past the key's cap of 4")
            } catch {
                #expect((error as? GatewayError)?.kind == .tooManyRequests && "\(error)".contains("at most 4"), "\(error)")
            }
            clock.advance(seconds: 3600)
            _ = try await installations.reserveRegistrationID(rule: listen, client: "198.51.100.3")
        }
    }

    /// One signed-in user stores at most `limits.maxStoredPerUserPerDay` notifications a day (429
    /// with `Retry-After` past it, refilling over the day); hub keys are not limited by it.
    @Test func aUserStoresABoundedNumberOfNotificationsADay() async throws {
        let clock = ManualClock()
        try await InMemoryGatewayFixture.with(clock: clock, rewrite: Self.limits(["maxStoredPerUserPerDay": 2])) { fixture in
            _ = try await fixture.register(fixture.device(.apns), user: "bob")
            for _ in 0..<2 {
                #expect(try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=bob", body: #""hi""#).status == 200)
            }
            let refused = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=bob", body: #""hi""#)
            #expect(refused.status == 429 && refused.header("Retry-After") != nil, "\(refused.bodyText)")
            #expect(refused.bodyText.contains("maxStoredPerUserPerDay"), "\(refused.bodyText)")
            let secure = try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=bob&secure=true", body: #""hi""#)
            #expect(secure.status == 429, "\(secure.bodyText)")
            // Another user has a day of their own; a hub key is not limited.
            #expect(try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=bob", user: "bob", body: #""hi""#).status == 200)
            let client = try HubAPITests.Client(fixture)
            for _ in 0..<3 {
                let sent = try await client.call(
                    "POST", "messages", body: Self.appleBody,
                    headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "username:bob")])
                #expect(sent.status == 201, "\(sent.bodyText)")
            }
            clock.advance(seconds: 86400 / 2)
            #expect(try await fixture.call("POST", "/api/notifications?pns=apns&to_tag=bob", body: #""hi""#).status == 200)
        }
    }

    /// The listing takes the names it documents and no other: a misspelled `$filter` is a 400
    /// naming it (never a listing of everything); names are percent-decoded (`%24top`).
    @Test func theHubListingParsesItsQueryStrictly() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try HubAPITests.Client(fixture)
            try await Self.putRegistrations(3, client)
            let misspelled = try await client.call("GET", "registrations?$filtr=Tags%20eq%20'news'")
            #expect(misspelled.status == 400 && misspelled.bodyText.contains("unknown parameter '$filtr'"), "\(misspelled.bodyText)")
            let encoded = try await client.call("GET", "registrations?%24top=1")
            #expect(encoded.status == 200, "\(encoded.bodyText)")
            #expect(encoded.bodyText.components(separatedBy: "<AppleRegistrationDescription").count == 2, "\(encoded.bodyText)")
            #expect(encoded.header("X-MS-ContinuationToken") != nil)
            let twice = try await client.call("GET", "registrations?$top=1&%24top=2")
            #expect(twice.status == 400 && twice.bodyText.contains("more than once"), "\(twice.bodyText)")
        }
    }

    /// A Listen key reads a browser's registration without the subscription's keys (P256DH,
    /// Auth) and with its endpoint masked: knowing an id is not enough to push to the browser.
    @Test func aListenKeyReadsABrowserSubscriptionMasked() async throws {
        try await InMemoryGatewayFixture.with { fixture in
            let client = try HubAPITests.Client(fixture)
            let endpoint = "https://fcm.googleapis.com/fcm/send/\(UUID().uuidString.lowercased())"
            let (p256dh, auth) = (
                "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", "tBHItJI5svbpez7KI4CCXg"
            )
            let body = """
                <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
                <BrowserRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                <Tags>news</Tags><Endpoint>\(endpoint)</Endpoint><P256DH>\(p256dh)</P256DH><Auth>\(auth)</Auth>
                </BrowserRegistrationDescription></content></entry>
                """
            let created = try await client.call("PUT", "registrations/browser-1", body: body, contentType: HubAPITests.atom)
            #expect(created.status == 200 && created.bodyText.contains(p256dh), "\(created.bodyText)")
            let masked = try await client.call(
                "GET", "registrations/browser-1", authorization: client.token(rule: SharedAccessRule.defaultListenName))
            #expect(masked.status == 200, "\(masked.bodyText)")
            for secret in [p256dh, auth, endpoint] { #expect(!masked.bodyText.contains(secret), "\(secret) in \(masked.bodyText)") }
            #expect(!masked.bodyText.contains("<P256DH>") && !masked.bodyText.contains("<Auth>"), "\(masked.bodyText)")
        }
    }

    /// A device key's installation write that read the installation unbound, while the backend
    /// bound it before the write landed, decides again on the bound installation and is refused:
    /// it cannot drop the binding (the read and the write are one compare-and-set in the store).
    @Test func aDeviceWriteRacingABackendsBindCannotDropTheBinding() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let loaded = try ConfigurationLoader.load(file: root.appendingPathComponent("config.json").path)
        let inner = InMemoryRegistrationStore()
        let armed = Mutex(false)
        let nativeID = Installations.registrationID(of: "i-1")
        let store = FaultyStore(inner) { operation throws(StoreError) in
            guard operation == .hubWrite,
                armed.withLock({ armed in
                    defer { armed = false }; return armed
                })
            else { return }
            // The backend binds the installation between the device's read and its write.
            guard var native = try await inner.registration(id: nativeID, app: .default) else { return }
            do { try native.setTags(native.tags + [try Tag("$UserId:{alice}")]) } catch { throw StoreError(.storage, "\(error)") }
            try await inner.restore([native], now: Timestamp(secondsSinceEpoch: 0))
        }
        let gateway = Gateway(
            app: loaded.defaultApp, store: store, dispatcher: Dispatcher(providers: []), shared: Gateway.Shared(metrics: GatewayMetrics()))
        let channel = String(repeating: "ab", count: 32)
        try await gateway.installations.write(
            Installation(id: "i-1", platform: .apns, pushChannel: channel, tags: ["news"]), writer: .backend, client: "10.0.0.1")
        armed.withLock { $0 = true }
        do {
            try await gateway.installations.write(
                Installation(id: "i-1", platform: .apns, pushChannel: channel, tags: ["sports"]), writer: .device, client: "198.51.100.7")
            Issue.record("the device's write, decided on the unbound installation, went through")
        } catch {
            #expect(error.kind == .forbidden && "\(error)".contains("userId"), "\(error)")
        }
        let stored = try #require(try await inner.registration(id: nativeID, app: .default))
        #expect(stored.tags.map(\.rawValue).contains("$UserId:{alice}"), "\(stored.tags)")
        #expect(stored.tags.map(\.rawValue).contains("news"), "\(stored.tags)")
    }
}
