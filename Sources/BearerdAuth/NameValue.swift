/// A name and a value from the config (`audience=https://api`, `X-Amz-Target: …`).
package struct NameValue: Sendable, Equatable {
    package var name: String
    package var value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
