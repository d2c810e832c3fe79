import ArgumentParser
import PushgateCurl
import PushgateXML

/// `pushgate version`: the versions of Pushgate and the C libraries it links.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version", abstract: "Print the version of Pushgate and of libcurl and libxml2.")

    static let pushgateVersion = "0.1.0"

    func run() throws {
        print("pushgate \(Self.pushgateVersion)")
        print(CurlLibrary.info.description)
        print("libxml2 \(XMLPayload.libraryVersion)")
    }
}
