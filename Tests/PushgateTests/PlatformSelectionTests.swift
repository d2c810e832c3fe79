import Pushgate
import Testing

@Suite struct PlatformSelectionTests {
    @Test(arguments: [
        ("apns", [Platform.apns]),
        ("WNS", [.wns]),
        ("all", Platform.allCases),
        ("ALL", Platform.allCases),
        ("wns, apns", [.apns, .wns]),
        ("gcm,fcm,gcm", [.fcm, .gcm]),
        ("apns,all", Platform.allCases),
    ])
    func acceptsPlatformsAllAndCommaLists(text: String, expected: [Platform]) throws {
        #expect(try PlatformSelection(parsing: text).platforms == expected)
    }

    @Test func rejectsUnknownPlatformsNamingTheValue() {
        #expect {
            try PlatformSelection(parsing: "apns,mpns")
        } throws: { error in
            let error = error as! PlatformSelectionError
            return error.description.contains("'mpns'") && !error.isOverLimit
        }
    }

    @Test(arguments: ["", " ", "apns,,wns", ","])
    func rejectsEmptyValuesAndItems(text: String) {
        #expect(throws: PlatformSelectionError.self) { try PlatformSelection(parsing: text) }
    }

    @Test func describesItselfCanonically() throws {
        #expect(try PlatformSelection(parsing: "wns,apns").description == "apns,wns")
        #expect(PlatformSelection.all.description == "all")
    }
}
