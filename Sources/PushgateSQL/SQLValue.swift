/// A value bound to a statement parameter, in either store's dialect (SQLite binds it natively;
/// PostgreSQL numbers the `?` placeholders and binds it as its own type).
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    /// A boolean: SQLite stores 1 or 0, PostgreSQL a `boolean`.
    case bool(Bool)
}
