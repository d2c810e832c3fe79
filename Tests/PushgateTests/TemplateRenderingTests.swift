import Pushgate
import Testing

/// Hostile values: nothing a property contains can break or inject into a payload.
@Suite struct TemplateRenderingTests {
    static let hostileValues: [String] = [
        #"quote " and backslash \ and \" and \\""#,
        "control \u{00}\u{01}\u{08}\u{0B}\u{0C}\u{1F}\u{7F} chars\n\r\t",
        "</text><script>alert(1)</script>",
        "]]><!-- & &amp; &#x41; <![CDATA[x]]>",
        "\"},\"aps\":{\"alert\":\"injected\"},\"x\":{\"y\":\"",
        "emoji 😀👍🏽🇫🇷 and e\u{301} and 中文",
        "line\u{2028}separator\u{2029}paragraph",
        "'single' and \"double\" quotes",
        "$(message) {'nested'} #(n)",
    ]

    @Test(arguments: hostileValues)
    func jsonStringValuesRoundTripExactly(value: String) throws {
        let template = try Template(json: #"{"aps":{"alert":"$(message)","badge":1},"k":"{'x' + $(message)}"}"#)
        let output = try template.render(["message": value])
        let parsed = try JSONParser.parse(output)
        #expect(parsed["aps"]?["alert"]?.stringValue == value)
        #expect(parsed["k"]?.stringValue == "x" + value)
        #expect(parsed.objectMembers?.map(\.key) == ["aps", "k"])
        #expect(parsed["aps"]?.objectMembers?.map(\.key) == ["alert", "badge"])
    }

    @Test func jsonEscapingUsesShortFormsAndEscapesLineSeparators() throws {
        let template = try Template(json: #"["$(v)"]"#)
        let output = try template.renderString(["v": "a\"b\\c\nd\u{01}\u{2028}"])
        #expect(output == #"["a\"b\\c\nd\u0001\u2028"]"#)
    }

    @Test func invalidUTF8PropertyBytesAreRejectedCleanly() {
        #expect {
            try TemplateProperties(validatingUTF8: ["message": [0x48, 0xC3, 0x28]])
        } throws: { error in
            (error as! TemplateRenderError).description == "property 'message' is not valid UTF-8"
        }
        #expect(throws: Never.self) { try TemplateProperties(validatingUTF8: ["message": Array("héllo".utf8)]) }
    }

    @Test func xmlTextAndAttributesEscapeEverythingStructural() throws {
        let document = XMLTemplateDocument(
            root: XMLTemplateElement(
                name: "toast",
                attributes: [XMLTemplateAttribute(name: "launch", value: "{'id=' + $(message)}")],
                children: [.text("$(message)")]),
            hasDeclaration: false)
        let template = try Template(xml: document)
        let output = try template.renderString(["message": #"<a href="x">&]]>'"#])
        #expect(
            output
                == #"<toast launch="id=&lt;a href=&quot;x&quot;&gt;&amp;]]&gt;&apos;">&lt;a href=&quot;x&quot;&gt;&amp;]]&gt;&apos;</toast>"#
        )
    }

    @Test func xmlRejectsCharactersXMLCannotCarryNamingTheProperty() throws {
        let document = XMLTemplateDocument(root: XMLTemplateElement(name: "toast", children: [.text("$(message)")]), hasDeclaration: false)
        let template = try Template(xml: document)
        #expect {
            try template.render(["message": "ok\u{01}bad"])
        } throws: { error in
            (error as! TemplateRenderError).description
                == "property 'message' cannot be placed in an XML payload: character U+0001 at position 3 cannot appear in XML"
        }
        #expect(throws: TemplateRenderError.self) { try template.render(["message": "\u{FFFE}"]) }
        // Tabs, new lines and carriage returns are fine (carriage returns as references).
        #expect(try template.renderString(["message": "a\tb\nc\rd"]) == "<toast>a\tb\nc&#13;d</toast>")
    }

    @Test func rawTemplatesEmitTheValueUnescaped() throws {
        let template = try Template(raw: "$(secureId)")
        #expect(try template.renderString(["secureId": "42"]) == "42")
        #expect(try Template(raw: "plain").renderString([:]) == "plain")
    }

    @Test func literalsAndStructureAreReEmittedCompactly() throws {
        let template = try Template(
            json: """
                {
                  "aps": { "alert": "Hi \\u00e9", "sound": null, "badge": 1.50, "list": [true, false] },
                  "$(notakey)": "x"
                }
                """)
        #expect(template.isConstant)
        #expect(
            try template.renderString([:]) == #"{"aps":{"alert":"Hi é","sound":null,"badge":1.50,"list":[true,false]},"$(notakey)":"x"}"#)
    }

    @Test func compileErrorsNameTheJSONPath() {
        #expect {
            try Template(json: #"{"aps":{"alert":"$(a) + $(b)"}}"#)
        } throws: { error in
            let error = error as! TemplateError
            return error.location == "$.aps.alert" && error.reason.contains("inside braces")
        }
        #expect {
            try Template(json: #"{"list":["ok","$("]}"#)
        } throws: { error in
            (error as! TemplateError).location == "$.list[1]"
        }
        #expect {
            try Template(json: "{\"a\":\n  nope}")
        } throws: { error in
            (error as! TemplateError).description.contains("line 2, column 3: invalid JSON")
        }
    }

    @Test func propertyKeysListWhatTheTemplateReads() throws {
        let template = try Template(json: ##"{"a":"$(User)","b":"{.(Message,5) + %(x)}","c":"#(N)"}"##)
        #expect(template.propertyKeys == ["user", "message", "x", "n"])
    }
}
