import Pushgate
import Testing

/// The one parser of send bodies into template properties, which both APIs use (the tutorial API
/// and the hub's template sends parsed them apart, with different key rules and errors).
@Suite struct TemplatePropertiesParsingTests {
    func parse(_ text: String, _ rules: TemplateProperties.BodyRules) -> Result<[String: String], TemplatePropertiesError> {
        do {
            let properties = try TemplateProperties.parse(json: Array(text.utf8), rules: rules)
            return .success(Dictionary(uniqueKeysWithValues: properties.names.map { ($0, properties[$0] ?? "") }))
        } catch {
            return .failure(error)
        }
    }

    func refusal(_ text: String, _ rules: TemplateProperties.BodyRules) -> String {
        if case .failure(let error) = parse(text, rules) { return error.description }
        return "accepted"
    }

    @Test func theTutorialSendNeedsAMessageTheHubsDoesNot() {
        #expect((try? parse(#""Hi""#, .message).get()) == ["message": "Hi"])
        #expect(
            (try? parse(#"{"message":"Hi","count":3,"urgent":true}"#, .message).get()) == ["message": "Hi", "count": "3", "urgent": "true"])
        #expect(refusal(#"{"title":"Hi"}"#, .message).contains(#"must contain "message""#))
        // A Notification Hubs template send carries whatever properties its templates name.
        #expect((try? parse(#"{"title":"Hi","Badge":2}"#, .anyProperties).get()) == ["title": "Hi", "badge": "2"])
        #expect(refusal(#""Hi""#, .anyProperties).contains("a JSON object of properties, not a string"))
    }

    @Test func bothTakeTheSameKeysAndValues() {
        for rules in [TemplateProperties.BodyRules.message, .anyProperties] {
            #expect(refusal(#"{"message":"x","my-key":"y"}"#, rules).contains("'my-key' must be 1 to 120 letters, digits and _"))
            #expect(refusal(#"{"message":"x","":"y"}"#, rules).contains("letters, digits and _"))
            let long = String(repeating: "k", count: 121)
            #expect(refusal(#"{"message":"x","\#(long)":"y"}"#, rules).contains("1 to 120"))
            #expect(refusal(#"{"message":"x","list":[1]}"#, rules) == "$.list must be a string, number or boolean")
            #expect(refusal(#"{"message":"x","n":null}"#, rules) == "$.n must be a string, number or boolean")
            #expect(refusal(#"[1]"#, rules).contains("not an array"))
            #expect(refusal(#"{"message":"#, rules) != "accepted")
        }
    }
}
