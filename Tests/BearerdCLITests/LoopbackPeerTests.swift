import BearerdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let ipProgram = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

/// A host with `route_localnet=1` (kube-proxy sets it; CVE-2020-8558) lets other hosts and
/// containers reach 127.0.0.1. bearerd closes a connection to a loopback address from a peer off
/// the loopback network at accept. Acted out in a network namespace of the test's own, where
/// route_localnet is on and a second address (10.77.0.1) stands for the pod: the daemon runs in
/// it, and a client bound to that address connects to 127.0.0.1.
@Suite(
    "A loopback listener serves only loopback peers",
    .serialized,
    .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: ipProgram)),
    .timeLimit(.minutes(2))
)
struct LoopbackPeerTests {
    static let ip = ipProgram

    /// Runs `command` in the namespace; returns its standard output.
    @discardableResult
    static func inNamespace(_ namespace: String, _ command: [String]) throws -> String {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Self.ip)
        process.arguments = ["netns", "exec", namespace] + command
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    static func ipCommand(_ arguments: [String]) throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: Self.ip)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestClientError("ip \(arguments) failed") }
    }

    /// The bytes a request from `source` to 127.0.0.1:`port` gets back; "0" when closed unanswered.
    static func answerBytes(namespace: String, source: String, port: Int) throws -> String {
        let script = """
            import socket
            s = socket.socket()
            s.settimeout(5)
            s.bind(("\(source)", 0))
            s.connect(("127.0.0.1", \(port)))
            try:
                s.sendall(b"GET /probe HTTP/1.1\\r\\nHost: 127.0.0.1:\(port)\\r\\nConnection: close\\r\\n\\r\\n")
                print(len(s.recv(4096)))
            except (BrokenPipeError, ConnectionResetError, socket.timeout):
                print(0)
            """
        return try Self.inNamespace(namespace, ["python3", "-c", script]).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
    }

    @Test(arguments: [false, true])
    func aPeerOffTheLoopbackNetworkIsClosedAtAccept(anyUser: Bool) async throws {
        let namespace = "bearerd-lo-\(getpid())-\(anyUser ? 1 : 0)"
        try Self.ipCommand(["netns", "add", namespace])
        defer { try? Self.ipCommand(["netns", "delete", namespace]) }
        try Self.inNamespace(namespace, ["ip", "link", "set", "lo", "up"])
        try Self.inNamespace(namespace, ["ip", "addr", "add", "10.77.0.1/32", "dev", "lo"])
        try Self.inNamespace(namespace, ["sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"])
        try Self.inNamespace(namespace, ["sysctl", "-qw", "net.ipv4.conf.lo.route_localnet=1"])

        let directory = try TemporaryDirectory()
        let token = try directory.write("loopback-token-0815\n", to: "token")
        // Nothing listens upstream: a served request gets bearerd's own 502.
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            \(anyUser ? "socket_allow_any_user: true" : "")
            upstream:
              url: http://127.0.0.1:9
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            """,
            to: "bearerd.yaml"
        )
        let bearerd = try BearerdProcess(
            program: Self.ip,
            ["netns", "exec", namespace, BearerdProcess.executable, "serve", "-c", config]
        )
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)

        let fromLoopback = try Self.answerBytes(namespace: namespace, source: "127.0.0.1", port: port)
        #expect(Int(fromLoopback).map { $0 > 0 } == true, "a loopback peer is served: \(fromLoopback)")
        let fromPod = try Self.answerBytes(namespace: namespace, source: "10.77.0.1", port: port)
        #expect(fromPod == "0", "a peer at 10.77.0.1 got \(fromPod) bytes")
        try await waitUntil { bearerd.stderr.contains("came from an address off the loopback network") }
        #expect(bearerd.stderr.contains("10.77.0.1"), "\(bearerd.stderr)")
    }
}
