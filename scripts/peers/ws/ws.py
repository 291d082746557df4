"""A WebSocket peer for bearerd's upgrade tests, on the `websockets` package (PyPI).

  ws.py server PORTFILE TOKEN   an echo server on 127.0.0.1 (a free port, written to PORTFILE):
                                it refuses a handshake without `Authorization: Bearer TOKEN`
                                (401), says "hello" first, then echoes every message, and
                                answers "bye" to "close" by closing.
  ws.py client URL              through URL: reads the hello, sends 200 messages of 1 B to
                                256 KiB (text and binary) and one of 1 MiB, checks each echo,
                                then asks for the close; prints "ok MESSAGES BYTES" or exits 1.
"""

import asyncio
import os
import sys
from http import HTTPStatus

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve


async def run_server(port_file, token):
    def authorized(connection, request):
        if request.headers.get("Authorization") != f"Bearer {token}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "no token\n")
        return None

    async def echo(connection):
        await connection.send("hello")
        async for message in connection:
            if message == "close":
                await connection.send("bye")
                await connection.close()
                return
            await connection.send(message)

    async with serve(echo, "127.0.0.1", 0, process_request=authorized, max_size=2 << 20, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        with open(port_file + ".tmp", "w") as handle:
            handle.write(str(port))
        os.rename(port_file + ".tmp", port_file)
        await asyncio.Future()


async def run_client(url):
    async with connect(url, max_size=2 << 20, compression=None, open_timeout=10) as connection:
        assert await connection.recv() == "hello", "no hello from the server"
        total = 0
        sizes = [1 + (index * 1319) % (256 << 10) for index in range(200)] + [1 << 20]
        for index, size in enumerate(sizes):
            message = os.urandom(size) if index % 2 else ("x" * size)
            await connection.send(message)
            echoed = await asyncio.wait_for(connection.recv(), 10)
            assert echoed == message, f"message {index} ({size} bytes) came back different"
            total += size
        await connection.send("close")
        assert await connection.recv() == "bye"
    print(f"ok {len(sizes)} {total}")


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(run_server(sys.argv[2], sys.argv[3]))
    else:
        try:
            asyncio.run(run_client(sys.argv[2]))
        except Exception as error:
            print(f"failed: {type(error).__name__}: {error}")
            sys.exit(1)
