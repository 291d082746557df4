/// A value parsed from text that came from outside (a config value, a client's request target),
/// or why it is refused, in words for whoever wrote the text. Not an error: the caller says what
/// a refusal is (a config issue under its key, a 400 to a client), so BearerdConfig's one error
/// stays ``ConfigError``.
package enum Parsed<Value> {
    /// The text holds a value.
    case parsed(Value)
    /// Why the text is refused: what is wrong and what form is expected.
    case refused(String)

    /// The value, or `nil` when the text was refused.
    package var value: Value? {
        guard case .parsed(let value) = self else { return nil }
        return value
    }

    /// The value made into another, or the same refusal.
    package func map<Other>(_ transform: (Value) -> Other) -> Parsed<Other> {
        switch self {
        case .parsed(let value): .parsed(transform(value))
        case .refused(let reason): .refused(reason)
        }
    }

    /// Why the text was refused, or `nil` when it holds a value.
    package var refusal: String? {
        guard case .refused(let reason) = self else { return nil }
        return reason
    }
}

extension Parsed: Sendable where Value: Sendable {}
extension Parsed: Equatable where Value: Equatable {}
