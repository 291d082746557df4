/// The array a connection's heads are parsed into, reused from one head to the next. A head's
/// fields are written once, by its parse; once that head is gone its array is unique again, and
/// the next parse appends into it without an allocation. While the previous head still lives (a
/// held 401, an exchange that a late callback still holds), taking the array copies it on write,
/// as any Swift array does: never shared, only one allocation more.
struct FieldStorage {
    /// A head with more fields than this gives its array back, so that one large head does not
    /// keep a large array for the rest of the connection.
    static let keptCapacity = 32

    private var spare: [HeadField] = []

    /// An empty array to parse a head into, with the capacity of the last head's.
    mutating func take() -> [HeadField] {
        var fields = self.spare
        self.spare = []
        fields.removeAll(keepingCapacity: true)
        return fields
    }

    /// Keeps a parsed head's array for the next parse (shared with the head until it is gone).
    mutating func keep(_ fields: [HeadField]) {
        if fields.capacity <= Self.keptCapacity { self.spare = fields }
    }
}
