import Pushgate
import Testing

@Suite struct TextHelpersTests {
    @Test func trimsOnlyTheGivenCharactersAtBothEnds() {
        #expect(" \t application/json \t".trimmed(of: " \t") == "application/json")
        #expect("  ".trimmed(of: " \t") == "")
        #expect("a b".trimmed(of: " \t") == "a b")
        // HTTP's optional whitespace is space and tab: a no-break space is content.
        #expect("\u{A0}dXNlcg==".trimmed(of: " \t") == "\u{A0}dXNlcg==")
        #expect("\r\nx\n".trimmed() == "x")
    }

    @Test func findsANeedleWhateverTheASCIICase() {
        #expect("application/XML".containsIgnoringASCIICase("xml"))
        #expect("text/html, application/atom+xml;q=0.9".containsIgnoringASCIICase("xml"))
        #expect("Xml".containsIgnoringASCIICase("xml"))
        #expect(!"application/json".containsIgnoringASCIICase("xml"))
        #expect(!"xm".containsIgnoringASCIICase("xml"))
        #expect(!"".containsIgnoringASCIICase("xml"))
        #expect("anything".containsIgnoringASCIICase(""))
        // Only ASCII letters fold: a non-ASCII lookalike does not match.
        #expect(!"ｘml".containsIgnoringASCIICase("xml"))
        #expect("é/XML".containsIgnoringASCIICase("xml"))
    }
}
