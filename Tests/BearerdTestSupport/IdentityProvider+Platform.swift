import Foundation

extension IdentityProvider {
    /// A platform token (a projected service-account token, a CI job's OIDC token) signed with
    /// `key` (a PEM private key), as `scripts/peers/idp/mint.py` makes it; `expiresIn` may be
    /// negative. The IdP trusts it when started with the public key as `platformKeys`.
    package static func mintPlatformToken(
        key: String,
        subject: String,
        audience: String = "api://bearerd-idp-exchange",
        expiresIn: Int = 600
    ) throws -> String {
        let root = ProjectScript.repository.path
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: root + "/.venv-idp/bin/python")
        process.arguments = [
            root + "/scripts/peers/idp/mint.py", "--key", key, "--sub", subject, "--aud", audience,
            "--exp-in", String(expiresIn),
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestClientError("mint.py failed") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
