import PushgateCurl
import Testing

@Suite struct CurlLibraryTests {
    @Test func theLinkedLibcurlSpeaksHTTP2OverOpenSSL() {
        let info = CurlLibrary.info
        #expect(info.supportsHTTP2, "APNs requires HTTP/2; install libcurl4-openssl-dev (libcurl built with nghttp2)")
        #expect(info.http2Library != nil)
        #expect(info.tlsLibrary?.hasPrefix("OpenSSL") == true)
        #expect(info.description.contains("libcurl \(info.version)"))
    }
}
