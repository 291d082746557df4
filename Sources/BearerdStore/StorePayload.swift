import BearerdAuth
import BearerdTokens
import Foundation

/// What a store file encrypts: the tokens as JSON, the user's session and the client token apart.
/// Files written before the two were apart hold the user's session at the top level.
struct StorePayload: Codable {
    var user: Session?
    var client: Session?
    /// The DPoP private key (`auth.dpop`), as its holder exported it.
    var dpopKey: String?
    /// The client bearerd registered (`auth.discover`).
    var registration: Registration?

    /// The plaintext for `tokens`.
    static func encode(_ tokens: StoredTokens) throws -> [UInt8] {
        Array(try JSONEncoder().encode(StorePayload(tokens)))
    }

    /// The tokens in a plaintext, or `nil` when it is not one.
    static func decode(_ plaintext: [UInt8]) -> StoredTokens? {
        (try? JSONDecoder().decode(StorePayload.self, from: Data(plaintext)))?.tokens
    }

    init(_ tokens: StoredTokens) {
        self.user = tokens.user.map(Session.init)
        self.client = tokens.client.map(Session.init)
        self.dpopKey = tokens.dpopKey?.value
        self.registration = tokens.registration.map(Registration.init)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.user = try container.decodeIfPresent(Session.self, forKey: .user)
        self.client = try container.decodeIfPresent(Session.self, forKey: .client)
        self.dpopKey = try container.decodeIfPresent(String.self, forKey: .dpopKey)
        // A registration that cannot be read is dropped, not the tokens: login registers again.
        self.registration = try? container.decodeIfPresent(Registration.self, forKey: .registration)
        if self.user == nil, self.client == nil, let legacy = try? Session(from: decoder),
            legacy.refreshToken != nil || legacy.accessToken != nil
        {
            self.user = legacy
        }
    }

    var tokens: StoredTokens {
        StoredTokens(
            user: self.user?.stored,
            client: self.client?.stored,
            dpopKey: self.dpopKey.map(Secret.init),
            registration: self.registration?.registration
        )
    }

    /// A registered client, as JSON.
    struct Registration: Codable {
        var issuer: String
        var clientID: String
        var clientSecret: String?
        var authMethod: String
        var resource: String

        init(_ registration: ClientRegistration) {
            self.issuer = registration.issuer
            self.clientID = registration.clientID
            self.clientSecret = registration.clientSecret?.value
            self.authMethod = registration.authMethod
            self.resource = registration.resource
        }

        var registration: ClientRegistration {
            ClientRegistration(
                issuer: self.issuer,
                clientID: self.clientID,
                clientSecret: self.clientSecret.map(Secret.init),
                authMethod: self.authMethod,
                resource: self.resource
            )
        }
    }
}

extension StorePayload {
    /// One session, as JSON.
    struct Session: Codable {
        var refreshToken: String?
        var accessToken: String?
        var accessExpiresAt: Double?
        var scope: String?
        var receivedAt: Double?
        var refreshSentAt: Double?

        init(_ session: StoredSession) {
            self.refreshToken = session.refreshToken?.value
            self.accessToken = session.accessToken?.value
            self.accessExpiresAt = session.accessExpiresAt?.timeIntervalSince1970
            self.scope = session.scope
            self.receivedAt = session.receivedAt?.timeIntervalSince1970
            self.refreshSentAt = session.refreshSentAt?.timeIntervalSince1970
        }

        var stored: StoredSession {
            StoredSession(
                refreshToken: self.refreshToken.map(Secret.init),
                accessToken: self.accessToken.flatMap { BearerToken.isValidTokenValue($0) ? BearerToken($0) : nil },
                accessExpiresAt: self.accessExpiresAt.map(Date.init(timeIntervalSince1970:)),
                scope: self.scope,
                receivedAt: self.receivedAt.map(Date.init(timeIntervalSince1970:)),
                refreshSentAt: self.refreshSentAt.map(Date.init(timeIntervalSince1970:))
            )
        }
    }
}
