/// Parsers for the config file's value syntaxes. Each returns `nil` on bad input; the loader turns
/// that into an issue naming the key and the expected form.
package enum ConfigValueParsers {
    /// `true`/`false` (also `yes`/`no`, `on`/`off`), any case.
    package static func bool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on": true
        case "false", "no", "off": false
        default: nil
        }
    }

    /// A non-negative whole number.
    static func count(_ text: String) -> Int? {
        guard let value = Int(text), value >= 0 else { return nil }
        return value
    }

    /// A duration: a number with a unit (`ms`, `s`, `m`, `h`), or a bare number of seconds.
    /// `1.5s` and `250ms` are fine; negative values are not.
    static func duration(_ text: String) -> Duration? {
        let units: [(suffix: String, perUnit: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = Substring(text)
        var scale = 1.0
        for unit in units where text.hasSuffix(unit.suffix) {
            number = text.dropLast(unit.suffix.count)
            scale = unit.perUnit
            break
        }
        guard let value = Double(number.trimmingPrefixWhitespace()), value.isFinite, value >= 0,
            value * scale <= Self.longestDuration
        else { return nil }
        return .milliseconds(Int64((value * scale * 1000).rounded()))
    }

    /// Beyond any key's range, but held by `Duration` and `TimeAmount` with room to spare, so a
    /// value like 1e300s is refused instead of trapping.
    static let longestDuration: Double = 1e9

    /// A duration as the config file writes it: `250ms`, `30s`, `5m`, `2h`, `1d` → `24h`.
    static func text(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        for (unit, size) in [("h", Int64(3_600_000)), ("m", 60_000), ("s", 1000)] where milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    /// A size as the config file writes it: `256B`, `64KiB`, `1MiB`.
    static func sizeText(_ bytes: Int) -> String {
        for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes > 0 && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)B"
    }

    /// A size in bytes: a whole number with an optional unit (`B`, `KiB`, `MiB`, `GiB`, `KB`,
    /// `MB`, `GB`; `k`, `m`, `g` mean the binary units).
    static func size(_ text: String) -> Int? {
        let units: [(suffix: String, factor: Int)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30),
            ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000),
            ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30),
            ("B", 1),
        ]
        for unit in units where text.hasSuffix(unit.suffix) {
            guard let value = Int(text.dropLast(unit.suffix.count).trimmingPrefixWhitespace()), value >= 0 else {
                return nil
            }
            let (product, overflow) = value.multipliedReportingOverflow(by: unit.factor)
            return overflow ? nil : product
        }
        guard let value = Int(text), value >= 0 else { return nil }
        return value
    }

    /// A file mode in octal, like `0660` or `660`, up to `0777`.
    static func fileMode(_ text: String) -> UInt32? {
        guard !text.isEmpty, text.count <= 4, let value = UInt32(text, radix: 8), value <= 0o777 else { return nil }
        return value
    }
}

extension Substring {
    fileprivate func trimmingPrefixWhitespace() -> Substring {
        var copy = self
        while let last = copy.last, last == " " { copy = copy.dropLast() }
        return copy
    }
}
