import Foundation
import Pushgate

extension Registration {
    /// The registration's template as the SQL stores keep it (JSON); nil when it has none.
    package func encodedTemplate() throws(StoreError) -> String? {
        try template.map { template throws(StoreError) in
            do {
                return String(decoding: try JSONEncoder().encode(template), as: UTF8.self)
            } catch {
                throw StoreError(.storage, "cannot encode the template of registration \(id)")
            }
        }
    }
}

extension Collection where Element == Registration {
    /// Each registration's template as stored (``Registration/encodedTemplate()``), in order.
    package func encodedTemplates() throws(StoreError) -> [String?] {
        var templates: [String?] = []
        templates.reserveCapacity(count)
        for registration in self { templates.append(try registration.encodedTemplate()) }
        return templates
    }
}
