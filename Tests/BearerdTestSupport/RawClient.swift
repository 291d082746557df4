import NIOCore
import NIOPosix

/// Sends raw bytes and returns everything the server sends back until it closes the connection
/// (or `limit` passes, which fails the test rather than hanging it).
public enum RawClient {
    /// One exchange of raw bytes.
    public static func exchange(
        port: Int,
        _ request: String,
        group: any EventLoopGroup,
        limit: Duration = .seconds(10)
    ) async throws -> String {
        let channel = try await ClientBootstrap(group: group)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true)
                    )
                }
            }
        return try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    try await outbound.write(ByteBuffer(string: request))
                    var received = ""
                    for try await buffer in inbound { received += String(buffer: buffer) }
                    return received
                }
            }
            group.addTask {
                try await Task.sleep(for: limit)
                throw TestClientError("no close from the server within \(limit)")
            }
            let result = try await group.next()!
            group.cancelAll()
            return result
        }
    }
}
