import Pushgate
import Testing

@Suite struct RegistrationJSONLinesTests {
    let policy = HandlePolicy(wnsChannelHosts: ["*.notify.windows.com"])
    let id = try! RegistrationID("0123456789abcdef0123456789abcdef")

    func line(_ replacing: [String: String] = [:]) -> String {
        var fields: [(String, String)] = [
            ("id", #""0123456789abcdef0123456789abcdef""#), ("platform", #""apns""#),
            ("handle", "\"" + String(repeating: "ab", count: 32) + "\""),
            ("tags", #"["username:alice"]"#), ("owner", #""alice""#),
        ]
        for (key, value) in replacing {
            if let index = fields.firstIndex(where: { $0.0 == key }) { fields[index].1 = value } else { fields.append((key, value)) }
        }
        return "{" + fields.filter { $0.1 != "-" }.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    func error(_ text: String) -> String {
        do {
            _ = try Registration(jsonLine: text, app: .default, handles: policy)
            return "no error"
        } catch {
            return error.description
        }
    }

    @Test func aRegistrationSurvivesTheRoundTripWithEveryField() throws {
        let original = try Registration(
            id: id, handle: try policy.validate("https://db5.notify.windows.com/?token=A%2Bb/c", for: .wns),
            tags: [try Tag("username:alice"), try Tag("lang:fr"), try Tag("news")],
            template: RegistrationTemplate(
                name: "toast",
                body: #"<toast><visual><binding template="ToastText01"><text id="1">$(message)</text></binding></visual></toast>"#,
                headers: ["X-WNS-Type": "wns/toast", "X-WNS-TTL": "60"]),
            expiresAt: Timestamp(secondsSinceEpoch: 1_900_000_000.25), owner: "alice \"admin\" \\ x")
        let text = original.jsonLine
        #expect(!text.contains("\n"))
        #expect(try Registration(jsonLine: text, app: .default, handles: policy) == original)
        // The minimal form: no expiry, no template.
        let minimal = try Registration(jsonLine: line(), app: .default, handles: policy)
        #expect(minimal.expiresAt == nil && minimal.template == nil)
        let reread = try Registration(jsonLine: minimal.jsonLine, app: .default, handles: policy)
        #expect(reread == minimal)
    }

    @Test func badLinesNameTheFieldThatIsWrong() {
        #expect(error("{").hasPrefix("invalid JSON at column 2"))
        #expect(error("[1]") == "expected a JSON object, found an array")
        #expect(error(line(["handel": #""x""#])).hasPrefix("unknown field 'handel'"))
        #expect(error(line(["id": "-"])) == "'id' is required")
        #expect(error(line(["id": #""xyz!""#])).hasPrefix("'id': "))
        #expect(error(line(["platform": #""mpns""#])) == "'platform': 'mpns' is not one of \(Platform.names)")
        #expect(error(line(["handle": #""abcd""#])).hasPrefix("'handle': APNs device token has length 4"))
        #expect(
            error(line(["platform": #""wns""#, "handle": #""https://evil.example.com/x""#])).hasPrefix("'handle': ")
                && error(line(["platform": #""wns""#, "handle": #""https://evil.example.com/x""#])).contains("evil.example.com"))
        #expect(error(line(["tags": #"["ok", 3]"#])) == "'tags'[1] must be a string")
        #expect(error(line(["tags": #"["bad tag"]"#])).hasPrefix("'tags'[0]: "))
        #expect(error(line(["owner": "7"])) == "'owner' must be a string, found a number")
        #expect(error(line(["owner": #""""#])) == "'owner' must not be empty")
        #expect(error(line(["expiresAt": #""tomorrow""#])) == "'expiresAt' must be a number (seconds since the epoch)")
        #expect(error(line(["template": #"{"headers":{}}"#])) == "'template' must be an object with a string 'body'")
    }

    @Test func invalidUTF8IsReportedWithTheByteAsItIsInTheFile() {
        var bytes = Array(line().utf8)
        bytes.insert(0xFF, at: 51)
        #expect {
            try Registration(jsonLine: bytes, app: .default, handles: policy)
        } throws: { error in
            let error = error as! RegistrationLineError
            return error.description == "invalid UTF-8: byte 0xFF at byte 52" && error.column == 52
        }
        // A String decoded from the same bytes has already replaced 0xFF with U+FFFD (0xEF 0xBF 0xBD).
        #expect(!error(String(decoding: bytes, as: UTF8.self)).contains("0xFF"))
        // A truncated sequence is named by the byte that starts it.
        var truncated = Array(line().utf8)
        truncated.insert(contentsOf: [0xC3, 0x28], at: 10)
        #expect(throws: RegistrationLineError(.invalidUTF8(byte: 0xC3, offset: 10))) {
            try Registration(jsonLine: truncated, app: .default, handles: policy)
        }
    }
}

@Suite struct RegistrationImportTests {
    let policy = HandlePolicy(wnsChannelHosts: ["*.notify.windows.com"])

    func line(id: String = "0123456789abcdef0123456789abcdef", handle: String = String(repeating: "ab", count: 32)) -> [UInt8] {
        Array(#"{"id":"\#(id)","platform":"apns","handle":"\#(handle)","tags":["username:alice"],"owner":"alice"}"#.utf8)
    }

    /// Runs the lines through an import of `backup.jsonl`: the registrations' ids, or the errors.
    func run(_ lines: [[UInt8]]) -> (ids: [String], errors: [String]) {
        var importer = RegistrationImport(source: "backup.jsonl", app: .default, handles: policy)
        var ids: [String] = []
        var errors: [String] = []
        for (index, bytes) in lines.enumerated() {
            do {
                if let registration = try importer.registration(line: bytes, number: index + 1) { ids.append(registration.id.rawValue) }
            } catch {
                errors.append(error.description)
            }
        }
        return (ids, errors)
    }

    @Test func anIDGivenTwiceIsRefusedNamingTheLineThatHadItFirst() {
        let other = "fedcba9876543210fedcba9876543210"
        let result = run([line(), Array("   \r".utf8), line(id: other), line(), [], line()])
        #expect(result.ids == ["0123456789abcdef0123456789abcdef", other])
        #expect(result.errors == ["backup.jsonl:4: id: duplicate of line 1", "backup.jsonl:6: id: duplicate of line 1"])
    }

    @Test func errorsNameTheFileTheLineAndTheColumnOrField() {
        var bad = line()
        bad.insert(0xFF, at: 51)
        let result = run([line(handle: "abcd"), bad, line(id: "x/y")])
        #expect(result.errors.count == 3)
        #expect(
            result.errors.prefix(2) == [
                "backup.jsonl:1: 'handle': APNs device token has length 4; expected an even number of hex digits, 64 to 200",
                "backup.jsonl:2:52: invalid UTF-8: byte 0xFF at byte 52",
            ])
        #expect(result.errors.last?.hasPrefix("backup.jsonl:3: 'id': ") == true)
    }

    @Test func linesAreAtMostOneMebibyteAndOneThatLongIsAccepted() {
        let limit = RegistrationImport.maximumLineBytes
        #expect(limit == 1_048_576)
        let padded = line() + Array(repeating: UInt8(ascii: " "), count: limit - line().count)
        #expect(padded.count == limit)
        #expect(run([padded]).ids.count == 1)
        #expect(
            run([padded + [0x20]]).errors == ["backup.jsonl:1: the line is 1048577 bytes long; the limit is 1048576 bytes (1 MiB)"])
        // A reader that stopped keeping a 200 MB line reports it the same way.
        let importer = RegistrationImport(source: "stdin", app: .default, handles: policy)
        #expect(
            importer.lineTooLong(number: 7, bytes: 200_000_000).description
                == "stdin:7: the line is 200000000 bytes long; the limit is 1048576 bytes (1 MiB)")
    }

    @Test func aChannelURIOffTheAllowListIsRefusedOnImportToo() {
        let wns = Array(
            #"{"id":"0123456789abcdef0123456789abcdef","platform":"wns","handle":"https://169.254.169.254/latest","owner":"a"}"#.utf8)
        let errors = run([wns]).errors
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("backup.jsonl:1: 'handle': WNS channel URI host '169.254.169.254' is an IP address") == true)
    }
}

extension RegistrationJSONLinesTests {
    /// A browser's subscription is imported as the object its page gives (`PushSubscription.toJSON()`,
    /// as the tutorial API takes it) or as its handle string; every platform is named in the error.
    @Test func aBrowserSubscriptionImportsInEitherForm() throws {
        let subscription =
            #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc123","keys":{"p256dh":"BGsX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU","auth":"AAECAwQFBgcICQoLDA0ODw"}}"#
        let fromObject = try Registration(
            jsonLine: line(["platform": #""browser""#, "handle": subscription]), app: .default, handles: policy)
        #expect(fromObject.platform == .browser)
        let asString =
            "\"" + fromObject.handle.value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
        let fromString = try Registration(jsonLine: line(["platform": #""browser""#, "handle": asString]), app: .default, handles: policy)
        #expect(fromString.handle == fromObject.handle)
        #expect(try Registration(jsonLine: fromObject.jsonLine, app: .default, handles: policy).handle == fromObject.handle)
        #expect(error(line(["platform": #""huawei""#])).contains("is not one of apns, fcm, gcm, wns, browser"))
        #expect(error(line(["handle": "[1]"])).contains("'handle' must be a string (or a browser's subscription object), found an array"))
    }
}

@Suite struct RegistrationImportBatchesTests {
    let policy = HandlePolicy(wnsChannelHosts: ["*.notify.windows.com"])

    /// The id of line `number`'s registration: the number in 32 hex digits.
    func id(_ number: Int) -> String {
        let digits = String(number, radix: 16)
        return String(repeating: "0", count: 32 - digits.count) + digits
    }

    /// Line `number`: a registration with id `id(number)` unless given.
    func line(_ number: Int, id: String? = nil) -> RegistrationImport.Line {
        let id = id ?? self.id(number)
        let text = #"{"id":"\#(id)","platform":"apns","handle":"\#(String(repeating: "ab", count: 32))","owner":"u"}"#
        return RegistrationImport.Line(number: number, content: .bytes(Array(text.utf8)))
    }

    func batches(_ lines: [RegistrationImport.Line], size: Int) -> RegistrationImportBatches<[RegistrationImport.Line]> {
        RegistrationImportBatches(lines, importer: RegistrationImport(source: "in.jsonl", app: .default, handles: policy), batchSize: size)
    }

    /// Reads every batch: the ids of each, and the error the sequence ended with.
    func read(_ batches: RegistrationImportBatches<[RegistrationImport.Line]>) async -> (ids: [[Int]], errors: RegistrationLineErrors?) {
        var ids: [[Int]] = []
        do {
            for try await batch in batches { ids.append(batch.map { Int($0.id.rawValue, radix: 16)! }) }
        } catch {
            return (ids, error)
        }
        return (ids, nil)
    }

    @Test func eachLineIsReadOnceIntoBatchesOfTheGivenSizeSkippingBlankLines() async {
        var lines = (1...7).map { line($0) }
        lines.insert(RegistrationImport.Line(number: 99, content: .bytes(Array(" \r".utf8))), at: 3)
        let result = await read(batches(lines, size: 3))
        #expect(result.ids == [[1, 2, 3], [4, 5, 6], [7]])
        #expect(result.errors == nil)
        #expect(await read(batches([], size: 3)).ids.isEmpty)
    }

    /// A bad line after more than a batch: the batches before it were handed on (a store writes
    /// them inside its transaction), none after it; the lines after it are still read, so every
    /// error is counted, and the sequence ends by throwing them (the store then rolls back).
    @Test func fromTheFirstBadLineNoBatchIsHandedOnButEveryLineIsStillChecked() async {
        var lines = (1...12).map { line($0) }
        lines[7] = line(8, id: "not an id")
        lines[10] = line(11, id: id(2))
        lines.append(RegistrationImport.Line(number: 13, content: .tooLong(bytes: 2 << 20)))
        let result = await read(batches(lines, size: 3))
        #expect(result.ids == [[1, 2, 3], [4, 5, 6]])
        #expect(result.errors?.count == 3)
        #expect(
            result.errors?.listed.map(\.description) == [
                "in.jsonl:8: 'id': registration id 'not an id' is malformed; expected 1 to 64 letters, digits or '-'",
                "in.jsonl:11: id: duplicate of line 2",
                "in.jsonl:13: the line is 2097152 bytes long; the limit is 1048576 bytes (1 MiB)",
            ])
        #expect(result.errors?.description == "3 invalid lines")
    }

    @Test func theFirstTwentyErrorsAreKeptAndTheRestCounted() async {
        let lines = (1...25).map { line($0, id: "bad!") }
        let errors = await read(batches(lines, size: 10)).errors
        #expect(errors?.count == 25)
        #expect(errors?.listed.count == RegistrationLineErrors.listedLimit)
        #expect(errors?.listed.last?.line == 20)
    }
}
