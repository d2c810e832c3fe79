import Foundation
import PNSSandbox
import Pushgate
import PushgateTesting
import Testing

/// Huawei Push Kit end to end against the sandbox's Push Kit service: `hms` registrations reached
/// by `pns=all`, one request for the batch, an uninstalled device's token pruned alone.
@Suite struct HuaweiTests {
    @Test func aBatchReachesEveryHuaweiDeviceAndAnIllegalTokenIsPrunedAlone() async throws {
        try await GatewayFixture.inProcess { fixture in
            let phones = [
                await fixture.sandbox.createDevice(.hms), await fixture.sandbox.createDevice(.hms),
                await fixture.sandbox.createDevice(.hms),
            ]
            var ids: [String] = []
            for phone in phones { ids.append(try await fixture.register(phone, user: "alice")) }
            let apple = await fixture.sandbox.createDevice(.apns)
            _ = try await fixture.register(apple, user: "alice")
            _ = await fixture.sandbox.state.setStatus(.uninstalled, deviceID: phones[1].id)
            let sent = try await fixture.call("POST", "/api/notifications?pns=all&to_tag=alice", user: "bob", body: #""Hello, Huawei""#)
            #expect(sent.status == 200, "\(sent.bodyText)")
            let result = try JSONParser.parse(sent.body)
            let huawei = result["platforms"]?.arrayElements?.first { $0["platform"]?.stringValue == "hms" }
            #expect(huawei?["total"]?.kind == .number("3"), "\(sent.bodyText)")
            #expect(huawei?["outcomes"]?["Success"]?.kind == .number("2"), "\(sent.bodyText)")
            #expect(huawei?["outcomes"]?["ExpiredChannel"]?.kind == .number("1"), "\(sent.bodyText)")
            for (index, phone) in phones.enumerated() {
                let inbox = await fixture.sandbox.state.inbox(deviceID: phone.id)
                #expect(inbox.count == (index == 1 ? 0 : 1), "phone \(index)")
                if index != 1 {
                    let message = try JSONParser.parse(Array(try #require(inbox.first).payload.utf8))
                    #expect(message["android"]?["notification"]?["body"]?.stringValue == "Hello, Huawei")
                }
            }
            #expect(await fixture.sandbox.state.inbox(deviceID: apple.id).count == 1)
            // One request carried the three tokens; the uninstalled one is pruned, the others kept.
            #expect(try await fixture.store.registration(id: try RegistrationID(ids[1]), app: .default) == nil)
            #expect(try await fixture.store.registration(id: try RegistrationID(ids[0]), app: .default) != nil)
            #expect(try await fixture.store.registration(id: try RegistrationID(ids[2]), app: .default) != nil)
            #expect(await fixture.sandbox.state.answeredCounts()["hms 200"] == 1, "one request for the batch")
        }
    }
}
