/// RFC 3986 percent-encoding: every byte of the UTF-8 form except the unreserved characters
/// `A-Z a-z 0-9 - . _ ~` becomes `%XX` (upper-case hex), like .NET's `Uri.EscapeDataString`.
enum PercentEncoding {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    static func encode(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
