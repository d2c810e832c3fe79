import Pushgate
import Testing

/// What a store keeps of an audience, and what it reads back.
@Suite struct AudienceTests {
    @Test func everyAudienceIsStoredAndReadBackAsItWas() throws {
        let audiences: [Audience] = [
            .tags(try TagExpression(parsing: "news && !sports")), .everyone, .fcm(try FCMRecipient(topic: "news")),
            .fcm(try FCMRecipient(condition: "'a' in topics || 'b' in topics")),
            .direct(handles: [
                DeviceHandle(uncheckedPlatform: .apns, value: String(repeating: "ab", count: 32)),
                DeviceHandle(uncheckedPlatform: .wns, value: #"https://db5.notify.windows.com/?token=a"b\c"#),
            ]),
        ]
        for audience in audiences {
            #expect(Audience.stored(text: audience.description, recipient: audience.storedRecipient) == audience, "\(audience)")
        }
    }

    /// Direct handles are handles, each once: their place in the send names their target, and no
    /// registration is made up for them in what is stored.
    @Test func directHandlesAreStoredAsHandles() throws {
        let handle = DeviceHandle(uncheckedPlatform: .apns, value: String(repeating: "01", count: 32))
        let audience = Audience.direct(handles: [handle, handle])
        #expect(audience == .handles([handle]))
        #expect(audience.storedRecipient == #"{"handles":[["apns",""# + handle.value + #""]]}"#)
        let targets = audience.targets(after: nil, limit: 10) { _, _, _ in [] }
        #expect(targets.map(\.registrationID.rawValue) == ["direct-0001"] && targets.map(\.handle) == [handle])
        #expect(audience.targets(after: try RegistrationID("direct-0001"), limit: 10) { _, _, _ in [] }.isEmpty)
    }

    /// A direct send stored by an earlier version (a line per target) still reads back.
    @Test func theEarlierLinePerTargetFormReadsBack() throws {
        let handle = DeviceHandle(uncheckedPlatform: .fcm, value: "token-1")
        let stored = Audience.stored(text: "direct send to 1 handle", recipient: "direct\ndirect-0001\tfcm\ttoken-1")
        #expect(stored == .handles([handle]))
        #expect(Audience.stored(text: "", recipient: #"{"handles":[["nope","x"]]}"#) == nil)
    }
}
