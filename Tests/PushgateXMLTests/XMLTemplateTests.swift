import Pushgate
import PushgateXML
import Testing

@Suite struct XMLTemplateTests {
    static let toast = """
        <toast launch="{'app?id=' + %(id)}"><visual><binding template="ToastText01"><text id="1">{'From ' + $(user) + ': ' + $(message)}</text></binding></visual></toast>
        """

    @Test func rendersTheTutorialToast() throws {
        let template = try Template(xmlText: Self.toast)
        let output = try template.renderString(["user": "bob", "message": "Hi", "id": "a b"])
        #expect(
            output
                == #"<toast launch="app?id=a%20b"><visual><binding template="ToastText01"><text id="1">From bob: Hi</text></binding></visual></toast>"#
        )
        #expect(template.propertyKeys == ["user", "message", "id"])
    }

    @Test(arguments: [
        "</text></binding></visual></toast><toast>",
        #"<![CDATA[ ]]> ]]> & &amp; &lt; "quoted" 'single'"#,
        "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>&e;",
        "emoji 😀 e\u{301} 中文 \u{2028}",
        "tab\tnew\nline\rreturn",
    ])
    func hostileValuesStayTextInWellFormedXML(value: String) throws {
        let template = try Template(xmlText: Self.toast)
        let output = try template.render(["user": value, "message": value, "id": value])
        #expect(try XMLPayload.rootElementName(of: output) == "toast")
        // Parse the output back as a template: the text node must hold exactly what was rendered.
        let reparsed = try XMLTemplateParser.parse(String(decoding: output, as: UTF8.self))
        guard case .element(let visual) = reparsed.root.children.first, case .element(let binding) = visual.children.first,
            case .element(let text) = binding.children.first, case .text(let content) = text.children.first
        else {
            Issue.record("unexpected structure: \(reparsed)")
            return
        }
        #expect(content == "From \(value): \(value)")
        #expect(reparsed.root.attributes.first?.name == "launch")
    }

    @Test func keepsNamespacesCommentsProcessingInstructionsAndTheDeclaration() throws {
        let text = """
            <?xml version="1.0" encoding="utf-8"?>
            <tile xmlns="urn:tiles" xmlns:x="urn:x"><!-- note --><?keep it?><visual x:lang="$(lang)"><![CDATA[a<b]]> &amp; c</visual></tile>
            """
        let output = try Template(xmlText: text).renderString(["lang": "en-US"])
        #expect(
            output
                == #"<?xml version="1.0" encoding="utf-8"?><tile xmlns="urn:tiles" xmlns:x="urn:x"><!-- note --><?keep it?><visual x:lang="en-US">a&lt;b &amp; c</visual></tile>"#
        )
    }

    @Test func refusesDoctypesSoNoEntityIsEverExpanded() {
        let xxe = #"<?xml version="1.0"?><!DOCTYPE toast [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><toast>&xxe;</toast>"#
        #expect(
            performing: { try XMLTemplateParser.parse(xxe) },
            throws: { error in
                (error as! TemplateError).reason.contains("DOCTYPE is not allowed")
            })
        let laughs = #"<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><toast>&lol2;</toast>"#
        #expect(throws: TemplateError.self) { try XMLTemplateParser.parse(laughs) }
        #expect(throws: XMLPayloadError.self) { try XMLPayload.rootElementName(of: Array(xxe.utf8)) }
    }

    @Test func malformedXMLNamesTheLineAndColumn() {
        #expect(
            performing: { try XMLTemplateParser.parse("<toast>\n  <visual>\n</toast>") },
            throws: { error in
                let error = error as! TemplateError
                return error.location == "line 3, column 9" && error.reason.contains("invalid XML")
            })
        #expect(throws: TemplateError.self) { try XMLTemplateParser.parse("") }
        #expect(throws: TemplateError.self) { try XMLTemplateParser.parse("<a>&undefined;</a>") }
    }

    @Test func expressionErrorsNameTheElementPathAndLine() {
        let text = "<toast>\n<visual><binding><text id=\"$(\">x</text></binding></visual></toast>"
        #expect(
            performing: { try Template(xmlText: text) },
            throws: { error in
                (error as! TemplateError).location == "/toast/visual/binding/text (line 2), attribute id"
            })
        #expect(
            performing: { try Template(xmlText: "<badge value=\"#(count)\"/>") },
            throws: { error in
                (error as! TemplateError).reason.contains("#(…) is allowed only as a whole JSON string value")
            })
    }

    @Test func rootElementNameChecksPayloads() throws {
        #expect(try XMLPayload.rootElementName(of: Array("<badge value=\"1\"/>".utf8)) == "badge")
        #expect(
            performing: { try XMLPayload.rootElementName(of: Array("<toast><text></toast>".utf8)) },
            throws: { error in
                (error as! XMLPayloadError).line == 1
            })
        #expect(throws: XMLPayloadError.self) { try XMLPayload.rootElementName(of: [0x3C, 0x61, 0x3E, 0xFF, 0x3C, 0x2F, 0x61, 0x3E]) }
    }
}
