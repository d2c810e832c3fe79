/// A row read into values (a statement's row copied before it moves on).
package struct SQLValuesRow: SQLRowReading, Sendable {
    package let values: [SQLValue]

    package init(_ values: [SQLValue]) { self.values = values }

    private func value(_ column: Int) -> SQLValue { values.indices.contains(column) ? values[column] : .null }

    package func text(_ column: Int) -> String? {
        if case .text(let text) = value(column) { return text }
        return nil
    }

    package func double(_ column: Int) -> Double? {
        switch value(column) {
        case .real(let number): number
        case .integer(let number): Double(number)
        default: nil
        }
    }

    package func integer(_ column: Int) -> Int? {
        switch value(column) {
        case .integer(let number): Int(number)
        case .real(let number): Int(number)
        case .bool(let flag): flag ? 1 : 0
        default: nil
        }
    }

    package func bool(_ column: Int) -> Bool {
        switch value(column) {
        case .bool(let flag): flag
        case .integer(let number): number != 0
        default: false
        }
    }
}
