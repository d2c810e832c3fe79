import PNSSandbox
import Pushgate
import Testing

/// The sandbox's browser side of RFC 8291: it reads the RFC's example with the user agent's key.
@Suite struct WebPushDecryptionTests {
    @Test func theRFCsExampleDecryptsWithTheUserAgentsKey() throws {
        let body = try #require(
            Base64URL.decode(
                "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
            ))
        let keys = SandboxWebPushKeys(
            privateKey: try #require(Base64URL.decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")),
            auth: try #require(Base64URL.decode("BTBZMqHH6r4Tts7J_aSIgg")))
        #expect(
            String(decoding: try WebPushDecryption.decrypt(body, subscription: keys), as: UTF8.self)
                == "When I grow up, I want to be a watermelon")
        // One bit changed anywhere in the record: refused, not read.
        var tampered = body
        tampered[tampered.count - 1] ^= 1
        #expect(throws: (any Error).self) { try WebPushDecryption.decrypt(tampered, subscription: keys) }
        #expect(throws: (any Error).self) { try WebPushDecryption.decrypt(Array(body.prefix(40)), subscription: keys) }
    }
}
