import Pushgate
import PushgateGateway
import PushgateServer
import PushgateTesting
import Testing

@Suite struct DeviceRegistrationTests {
    @Test func acceptsTheTutorialsCapitalisedKeysAndLowerCaseOnes() throws {
        let tutorial = try Gateway.DeviceRegistration(
            json: Array("{\n  \"Platform\": \"apns\",\n  \"Handle\": \"AB12\",\n  \"Tags\": []\n}".utf8))
        #expect(tutorial == Gateway.DeviceRegistration(platform: "apns", handle: "AB12", tags: []))
        let lower = try Gateway.DeviceRegistration(json: Array(#"{"platform":"wns","handle":"https://x","tags":["a","b"]}"#.utf8))
        #expect(lower == Gateway.DeviceRegistration(platform: "wns", handle: "https://x", tags: ["a", "b"]))
        let noTags = try Gateway.DeviceRegistration(json: Array(#"{"platform":"fcm","handle":"t","tags":null}"#.utf8))
        #expect(noTags.tags.isEmpty)
    }

    @Test func namesTheMissingOrMistypedField() {
        let cases: [(String, String)] = [
            (#"{"Handle":"h"}"#, "\"Platform\" is required"),
            (#"{"Platform":"apns"}"#, "\"Handle\" is required"),
            (#"{"Platform":"apns","Handle":"h","Tags":"a"}"#, "\"Tags\" must be an array"),
            (#"{"Platform":"apns","Handle":"h","Tags":[1]}"#, "\"Tags\"[0] must be a string"),
            (#"["apns"]"#, "must be a JSON object"),
        ]
        for (body, message) in cases {
            #expect(
                performing: { try Gateway.DeviceRegistration(json: Array(body.utf8)) },
                throws: { error in
                    let error = error as! GatewayError
                    return error.kind == .invalid && error.message.contains(message)
                })
        }
    }
}
