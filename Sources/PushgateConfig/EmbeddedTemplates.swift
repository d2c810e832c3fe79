import Foundation

/// The default templates, compiled into the binary so that `pushgate sandbox` and `pushgate demo`
/// work from any folder. They are the files in the repository's `templates/` folder, byte for
/// byte (a test keeps them identical).
public enum EmbeddedTemplates {
    /// File name → contents.
    public static let files: [String: String] = [
        "notify.apns.json": #"{"aps": {"alert": "{'From ' + $(user) + ': ' + $(message)}"}}\#n"#,
        "notify.fcm.json": #"{"data": {"message": "{'From ' + $(user) + ': ' + $(message)}"}}\#n"#,
        "notify.gcm.json": #"{"data": {"message": "{'From ' + $(user) + ': ' + $(message)}"}}\#n"#,
        "notify.wns.xml":
            #"<toast><visual><binding template="ToastText01"><text id="1">{'From ' + $(user) + ': ' + $(message)}</text></binding></visual></toast>\#n"#,
        "secure.apns.json": #"{"aps": {"content-available": 1}, "secureId": "$(secureId)"}\#n"#,
        "secure.fcm.json": #"{"data": {"secureId": "$(secureId)"}}\#n"#,
        "secure.gcm.json": #"{"data": {"secureId": "$(secureId)"}}\#n"#,
        "secure.wns.txt": #"$(secureId)"#,
        "notify.browser.json":
            #"{"web_push": 8030, "notification": {"title": "{'From ' + $(user)}", "body": "$(message)", "navigate": "/"}}\#n"#,
        "secure.browser.json": #"{"secureId": "$(secureId)"}\#n"#,
        "notify.hms.json":
            #"{"android": {"notification": {"title": "{'From ' + $(user)}", "body": "$(message)", "click_action": {"type": 3}}}}\#n"#,
        "secure.hms.json": #"{"data": "$(secureId)"}\#n"#,
        "notify.unifiedpush.json": #"{"title": "{'From ' + $(user)}", "message": "$(message)"}\#n"#,
        "secure.unifiedpush.json": #"{"secureId": "$(secureId)"}\#n"#,
    ]

    /// Writes every template into `directory/templates/` and returns that folder.
    public static func write(to directory: String) throws -> String {
        let folder = (directory as NSString).appendingPathComponent("templates")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (name, content) in files {
            try content.write(toFile: (folder as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return folder
    }
}
