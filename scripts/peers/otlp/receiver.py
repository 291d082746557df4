"""An OTLP/HTTP trace receiver for bearerd's end-to-end tests: POST /v1/traces as the OTLP
specification describes it (https://opentelemetry.io/docs/specs/otlp/#otlphttp), binary
protobuf (application/x-protobuf) or OTLP JSON (application/json), identity or gzip, decoded
with opentelemetry-proto's ExportTraceServiceRequest, and each span written down as one JSON
line so a test can read what the exporter sent.

Settings come from the environment (scripts/otlp-receiver sets them):
  OTLP_PORT, OTLP_DIR (where spans.jsonl and requests are appended), OTLP_FAIL_FIRST (answer
  the first N POSTs 503 without keeping their spans, to check that the exporter retries; 0).

DIR/spans.jsonl: one JSON object a span, each request's spans together:
  {"trace_id": hex, "span_id": hex, "parent_span_id": hex or "", "name", "kind": "SPAN_KIND_...",
   "start_ns", "end_ns", "status": {"code": "STATUS_CODE_...", "message"},
   "attributes": {key: value}, "events": [{"name", "time_ns", "attributes"}],
   "links": [{"trace_id", "span_id", "attributes"}], "resource": {key: value}, "scope": name}
  An attribute's AnyValue is flattened: string, int, bool, double (NaN and the infinities as
  the strings "NaN", "Infinity", "-Infinity"), array -> list, kvlist -> object, bytes -> hex,
  no value -> null.
DIR/requests: one line a POST, written after its spans:
  "<n> <status> <media type|-> <content encoding> <span count|->".

Requests are strictly checked, since the exporter is what is under test: the body at most
16 MiB (after gzip too; 413 beyond), trace ids 16 bytes and span ids 8, not all zero, a parent
span id empty or 8 bytes (400 otherwise, the reason in the response and otlp.log). In OTLP JSON
ids are hex, not base64 (the one difference from protobuf's JSON mapping), enums integers or
names, unknown fields ignored. Other media types and content encodings are answered 415; a body
may come with Content-Length or chunked. The first OTLP_FAIL_FIRST POSTs are answered 503
whatever their body. Error bodies are a google.rpc.Status in the request's format.
"""

import base64
import http.server
import json
import math
import os
import re
import sys
import threading
import zlib

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                       ExportTraceServiceResponse)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

PORT = int(os.environ["OTLP_PORT"])
DIR = os.environ["OTLP_DIR"]
FAIL_FIRST = int(os.environ.get("OTLP_FAIL_FIRST") or "0")
SPANS = os.path.join(DIR, "spans.jsonl")
REQUESTS = os.path.join(DIR, "requests")
LIMIT = 16 * 1024 * 1024
DRAIN = 64 * 1024 * 1024  # a refused body up to this is read, so the client sees the answer
PROTOBUF, JSON = "application/x-protobuf", "application/json"
HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
lock = threading.Lock()
posts = {"count": 0}


class Refusal(Exception):
    """A request answered `status` (with the gRPC code of a google.rpc.Status), saying why."""

    def __init__(self, status, grpc_code, message):
        super().__init__(message)
        self.status = status
        self.grpc_code = grpc_code
        self.message = message


def malformed(message):
    return Refusal(400, 3, message)  # INVALID_ARGUMENT


def too_large(message):
    return Refusal(413, 8, message)  # RESOURCE_EXHAUSTED


def gunzip(data):
    """`data` gunzipped (every member), at most LIMIT bytes of it."""
    out = bytearray()
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(data, LIMIT + 1 - len(out))
        except zlib.error as error:
            raise malformed(f"gzip: {error}") from error
        if len(out) > LIMIT:
            raise too_large(f"more than {LIMIT} bytes once gunzipped")
        if not inflater.eof:
            raise malformed("gzip: truncated")
        data = inflater.unused_data
        if not data.strip(b"\0"):
            return bytes(out)


def hex_to_base64(value, where):
    """An OTLP JSON id (hex) as protobuf's JSON mapping has bytes (base64)."""
    if not isinstance(value, str):
        raise malformed(f"{where} is not a string")
    if not HEX.fullmatch(value):
        raise malformed(f"{where} {value[:80]!r} is not hex")
    return base64.b64encode(bytes.fromhex(value)).decode()


def member(obj, camel, snake):
    """The name a JSON object uses for a field: lowerCamelCase, or the proto name."""
    return camel if camel in obj or snake not in obj else snake


def hex_ids(document):
    """OTLP JSON's hex trace and span ids, in place, as base64 for json_format."""
    def items(obj, camel, snake):
        value = obj.get(member(obj, camel, snake)) if isinstance(obj, dict) else None
        return value if isinstance(value, list) else []

    def convert(obj, fields, where):
        for camel, snake in fields:
            name = member(obj, camel, snake)
            if name in obj and obj[name] is not None:
                obj[name] = hex_to_base64(obj[name], f"{where}.{camel}")

    for r, resource_spans in enumerate(items(document, "resourceSpans", "resource_spans")):
        for s, scope_spans in enumerate(items(resource_spans, "scopeSpans", "scope_spans")):
            for i, span in enumerate(items(scope_spans, "spans", "spans")):
                if not isinstance(span, dict):
                    continue
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                convert(span, (("traceId", "trace_id"), ("spanId", "span_id"), ("parentSpanId", "parent_span_id")), where)
                for k, link in enumerate(items(span, "links", "links")):
                    if isinstance(link, dict):
                        convert(link, (("traceId", "trace_id"), ("spanId", "span_id")), f"{where}.links[{k}]")


def decode(media, body):
    request = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as error:
            raise malformed(f"not an ExportTraceServiceRequest: {error}") from error
        return request
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise malformed(f"not JSON: {error}") from error
    if not isinstance(document, dict):
        raise malformed("the JSON is not an object")
    hex_ids(document)
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise malformed(f"not an OTLP JSON ExportTraceServiceRequest: {error}") from error
    return request


def check_ids(request):
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                name = f"span {span.name!r}"
                check_id(span.trace_id, 16, f"{name}: trace_id")
                check_id(span.span_id, 8, f"{name}: span_id")
                if span.parent_span_id:
                    check_id(span.parent_span_id, 8, f"{name}: parent_span_id")
                for link in span.links:
                    check_id(link.trace_id, 16, f"{name}: a link's trace_id")
                    check_id(link.span_id, 8, f"{name}: a link's span_id")


def check_id(value, size, where):
    if len(value) != size:
        raise malformed(f"{where} is {len(value)} bytes, not {size}")
    if not any(value):
        raise malformed(f"{where} is all zero")


def enum_name(enum, value):
    try:
        return enum.Name(value)
    except ValueError:
        return str(value)


def flatten(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [flatten(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return attributes(any_value.kvlist_value.values)
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    if kind == "double_value":
        value = any_value.double_value
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    return getattr(any_value, kind)


def attributes(key_values):
    return {kv.key: flatten(kv.value) for kv in key_values}


def lines(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield json.dumps({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": enum_name(Span.SpanKind, span.kind),
                    "start_ns": span.start_time_unix_nano,
                    "end_ns": span.end_time_unix_nano,
                    "status": {"code": enum_name(Status.StatusCode, span.status.code), "message": span.status.message},
                    "attributes": attributes(span.attributes),
                    "events": [{"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes(e.attributes)}
                               for e in span.events],
                    "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                               "attributes": attributes(link.attributes)} for link in span.links],
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                }, allow_nan=False)


def rpc_status(media, grpc_code, message):
    """A google.rpc.Status (code = 1, message = 2), as the OTLP spec wants error bodies."""
    if media == JSON:
        return json.dumps({"code": grpc_code, "message": message}).encode()
    text = message.encode()
    return b"\x08" + varint(grpc_code) + b"\x12" + varint(len(text)) + text


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "otlp-receiver"

    def answer(self, status, media, body, close=False, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.answer(200, "text/plain", b"ok\n")
        else:
            self.answer(404, "text/plain", b"not found\n")

    def read_body(self):
        """The request's body, at most LIMIT bytes, by Content-Length or chunked."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.body_started = True
            body = bytearray()
            while True:
                size_line = self.rfile.readline(1024)
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                except ValueError as error:
                    raise malformed("bad chunked encoding") from error
                if size == 0:
                    while self.rfile.readline(8192).strip():
                        pass  # trailers
                    return bytes(body)
                if len(body) + size > LIMIT:
                    raise too_large(f"a body of more than {LIMIT} bytes")
                body += self.rfile.read(size)
                self.rfile.readline(1024)
        length = self.headers.get("Content-Length")
        if length is None:
            raise Refusal(411, 3, "no Content-Length")
        try:
            length = int(length)
        except ValueError as error:
            raise malformed("bad Content-Length") from error
        if length < 0:
            raise malformed("bad Content-Length")
        if length > LIMIT:
            raise too_large(f"a body of {length} bytes, more than {LIMIT}")
        self.body_started = True
        body = self.rfile.read(length)
        if len(body) != length:
            raise malformed("the body ended early")
        return body

    def drain(self):
        """Reads and drops a refused body not read yet, when its Content-Length is not too
        much: closing with it unread could reset the connection before the client reads the
        answer."""
        if self.body_started or "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return
        if not 0 <= length <= DRAIN:
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 20))
            if not chunk:
                return
            length -= len(chunk)

    def do_POST(self):
        self.body_started = False
        if self.path.split("?")[0] != "/v1/traces":
            self.answer(404, "text/plain", b"not found\n", close=True)
            return
        with lock:
            posts["count"] += 1
            number = posts["count"]
        media = self.headers.get("Content-Type", "").split(";")[0].strip().lower() or "-"
        encoding = self.headers.get("Content-Encoding", "").strip().lower() or "identity"
        reply_media = JSON if media == JSON else PROTOBUF
        status, count, body_read = 200, "-", False
        try:
            if number <= FAIL_FIRST:
                try:  # the span count, for the requests file, if the body is one
                    body = self.read_body()
                    body_read = True
                    body = gunzip(body) if encoding != "identity" else body
                    request = decode(media, body)
                    count = str(sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans))
                except Refusal:
                    pass
                raise Refusal(503, 14, f"POST {number} of the first {FAIL_FIRST} is answered 503 (--fail-first)")
            if media not in (PROTOBUF, JSON):
                raise Refusal(415, 3, f"Content-Type {media}: only {PROTOBUF} and {JSON}")
            if encoding not in ("identity", "gzip", "x-gzip"):
                raise Refusal(415, 3, f"Content-Encoding {encoding}: only gzip and identity")
            body = self.read_body()
            body_read = True
            if encoding != "identity":
                body = gunzip(body)
            request = decode(media, body)
            count = str(sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans))
            check_ids(request)
            response = ExportTraceServiceResponse()
            reply = (json_format.MessageToJson(response).encode() if media == JSON
                     else response.SerializeToString())
            with lock:
                with open(SPANS, "a") as out:
                    for line in lines(request):
                        out.write(line + "\n")
                        out.flush()
            self.answer(200, reply_media, reply)
        except Refusal as refusal:
            status = refusal.status
            print(f"POST {number} refused: {refusal.status} {refusal.message}", file=sys.stderr, flush=True)
            # A body not read whole (too large, unsupported, badly framed) ends the connection.
            if not body_read:
                self.drain()
            self.answer(refusal.status, reply_media, rpc_status(reply_media, refusal.grpc_code, refusal.message),
                        close=not body_read)
        finally:
            with lock:
                with open(REQUESTS, "a") as out:
                    out.write(f"{number} {status} {media} {encoding} {count}\n")

    def log_message(self, format, *args):
        sys.stderr.write("%s - %s\n" % (self.log_date_time_string(), format % args))
        sys.stderr.flush()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    os.makedirs(DIR, exist_ok=True)
    print(f"otlp-receiver on http://127.0.0.1:{PORT}/v1/traces, spans in {SPANS}"
          f"{f', the first {FAIL_FIRST} POSTs answered 503' if FAIL_FIRST else ''}", file=sys.stderr, flush=True)
    Server(("127.0.0.1", PORT), Handler).serve_forever()
