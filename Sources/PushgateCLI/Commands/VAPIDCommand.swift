import ArgumentParser
import Pushgate
import PushgateConfig
import PushgateDispatch

/// `pushgate vapid`: the VAPID key pair of an app's Web Push service (RFC 8292).
struct VAPIDCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid", abstract: "Make and show VAPID keys for Web Push (services.browser).",
        subcommands: [Generate.self, PublicKey.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new VAPID key pair (P-256, base64url): the public key and the private key.",
            discussion: """
                Put the public key in services.browser.vapidPublicKey and the private key where \
                services.browser.vapidPrivateKey reads it (a file or an environment variable). \
                Keep the private key secret; web pages subscribe with the public key.
                """)

        func run() throws {
            let pair = VAPIDSigner.generateKeyPair()
            print("vapidPublicKey  \(pair.publicKey)")
            print("vapidPrivateKey \(pair.privateKey)")
        }
    }

    struct PublicKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "public-key",
            abstract: "Print the application server key a web page passes to pushManager.subscribe (base64url).",
            discussion: "Checks that the configured private key belongs to it when the key can be read.")

        @OptionGroup var options: ConfigOptions

        func run() throws {
            let loaded = try options.load()
            let app = try options.selectedApp(in: loaded)
            guard let browser = app.configuration.services.browser else {
                throw CLIError("app \(app.id) has no services.browser (Web Push); `pushgate vapid generate` makes a key pair")
            }
            if let privateKey = try? SecretResolver(baseDirectory: loaded.baseDirectory).resolve(browser.vapidPrivateKey) {
                let key: String
                do { key = Base64URL.encode(try VAPIDSigner.privateKey(privateKey).publicKey.x963Representation) } catch {
                    throw CLIError("services.browser.vapidPrivateKey (\(browser.vapidPrivateKey)): \(error.description)")
                }
                guard key == browser.vapidPublicKey else {
                    throw CLIError("services.browser.vapidPrivateKey is not the private key of vapidPublicKey")
                }
            }
            print(browser.vapidPublicKey)
        }
    }
}
