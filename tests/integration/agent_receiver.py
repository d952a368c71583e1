#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A Pyroscope-like receiver for agent_test.py: stores each push it takes.

usage: agent_receiver.py PORT DIR [--status CODE] [--fail-first N] [--partial 1]

Each POST /ingest?QUERY is stored as DIR/NNNNNN.bin (the body) and
DIR/NNNNNN.json (the query parameters, the headers the test checks, the
time it came), written aside and renamed so that the test never reads half
a push. Each POST /push.v1.PusherService/Push (Pyroscope's connect API) is
decoded by its field numbers (PushRequest { repeated RawProfileSeries
series = 1 }, RawProfileSeries { repeated LabelPair labels = 1; repeated
RawSample samples = 2 }, LabelPair { string name = 1; string value = 2 },
RawSample { bytes raw_profile = 1; string ID = 2 }) and each sample of each
series stored the same way: its raw_profile as .bin, its series' labels,
the request's number and the pprof's time_nanos and duration_nanos in the
.json. A request that does not decode, or comes without connect's headers
(Content-Type: application/proto, Connect-Protocol-Version: 1), is refused
with a connect error. --status CODE answers every push with CODE (connect:
with a JSON error body) and stores nothing; --fail-first N so answers the
first N pushes with 500, then takes the rest. DIR/failed.json counts the
pushes answered so.

Each POST to a path ending in /v1development/profiles (OTLP/HTTP profiles)
is stored whole as .bin (gunzipped when it came with Content-Encoding:
gzip: the encoding is in the .json), with its headers; one without
Content-Type: application/x-protobuf is refused with 415. Its answer is an
empty ExportProfilesServiceResponse, or with --partial 1 one whose
partial_success says rejected_profiles=1, error_message="one of them was
bad"; its failures (--status, --fail-first) carry a google.rpc.Status.
"""
import gzip
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse


CONNECT_PATH = '/push.v1.PusherService/Push'
OTLP_SUFFIX = '/v1development/profiles'
# ExportProfilesServiceResponse { partial_success = 1 { rejected_profiles = 1; error_message = 2 } }
PARTIAL_MSG = b'one of them was bad'
PARTIAL = bytes([0x0a, 2 + 2 + len(PARTIAL_MSG), 0x08, 0x01, 0x12, len(PARTIAL_MSG)]) + PARTIAL_MSG


def rpc_status(code, message):
    """google.rpc.Status { int32 code = 1; string message = 2; }"""
    m = message.encode()
    return bytes([0x08, code, 0x12, len(m)]) + m
# connect's codes for HTTP statuses (connectrpc.com/docs/protocol#error-codes)
CONNECT_CODES = {400: 'invalid_argument', 401: 'unauthenticated', 403: 'permission_denied',
                 404: 'unimplemented', 408: 'deadline_exceeded', 415: 'internal',
                 429: 'unavailable', 500: 'internal', 503: 'unavailable'}


def varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError('a varint runs past the end')
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """[(field number, wire type, value)] of a protobuf message: varints as ints, lengths as bytes."""
    out, i = [], 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise ValueError(f'field {num}: {n} bytes past the end')
            v, i = buf[i:i + n], i + n
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f'field {num}: wire type {wire}')
        if i > len(buf):
            raise ValueError(f'field {num} runs past the end')
        out.append((num, wire, v))
    return out


def push_request(body):
    """[(labels {name: value}, [raw_profile])] of a PushRequest."""
    series = []
    for num, wire, v in fields(body):
        if num != 1 or wire != 2:
            raise ValueError(f'PushRequest field {num}')
        labels, samples = {}, []
        for n2, w2, v2 in fields(v):
            if n2 == 1 and w2 == 2:
                kv = {n3: v3.decode() for n3, w3, v3 in fields(v2) if w3 == 2}
                if kv.get(1, '') in labels:
                    raise ValueError(f'label {kv.get(1)} twice')
                labels[kv.get(1, '')] = kv.get(2, '')
            elif n2 == 2 and w2 == 2:
                raw = [v3 for n3, w3, v3 in fields(v2) if n3 == 1 and w3 == 2]
                if len(raw) != 1:
                    raise ValueError('a RawSample without one raw_profile')
                samples.append(raw[0])
        series.append((labels, samples))
    return series


def pprof_span(raw):
    """(time_nanos, duration_nanos) of a pprof, gzipped or not (Profile fields 9 and 10)."""
    if raw[:2] == b'\x1f\x8b':
        raw = gzip.decompress(raw)
    t = d = 0
    for num, wire, v in fields(raw):
        if num == 9 and wire == 0:
            t = v
        elif num == 10 and wire == 0:
            d = v
    return t, d


class Handler(http.server.BaseHTTPRequestHandler):
    # keep-alive, as Pyroscope's and Parca's servers do: a client that
    # reconnected for every push would pay for it there
    protocol_version = "HTTP/1.1"

    def answer(self, code, message=None):
        body = b""
        if message is not None:
            # connect's error format: JSON with the code's name and a message
            body = json.dumps({"code": CONNECT_CODES.get(code, "unknown"),
                               "message": message}).encode()
        self.send_response(code)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def store(self, body, meta):
        with self.server.lock:
            self.server.count += 1
            base = os.path.join(self.server.dir, "%06d" % self.server.count)
        with open(base + ".bin.tmp", "wb") as f:
            f.write(body)
        os.rename(base + ".bin.tmp", base + ".bin")
        with open(base + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".json.tmp", base + ".json")

    def failing(self):
        """Whether this push is to be answered with a failure (counted in DIR/failed.json)."""
        with self.server.lock:
            self.server.pushes += 1
            fail = self.server.status != 200 or self.server.pushes <= self.server.fail_first
            if fail:
                self.server.failed += 1
                with open(os.path.join(self.server.dir, "failed.json.tmp"), "w") as f:
                    json.dump({"failed": self.server.failed}, f)
                os.rename(os.path.join(self.server.dir, "failed.json.tmp"),
                          os.path.join(self.server.dir, "failed.json"))
            return fail, self.server.pushes

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        connect = url.path == CONNECT_PATH
        otlp = url.path.endswith(OTLP_SUFFIX)
        fail, n = self.failing()
        if fail:
            code = self.server.status if self.server.status != 200 else 500
            if otlp:
                # UNAVAILABLE (14), as a Collector says it
                self.answer_proto(code, rpc_status(14, f"the receiver is told to fail (push {n})"))
                return
            self.answer(code, f"the receiver is told to fail (push {n})" if connect else None)
            return
        if otlp:
            self.otlp(body)
            return
        if connect:
            self.connect(body)
            return
        if url.path != "/ingest":
            self.answer(404)
            return
        meta = {
            "query": urllib.parse.parse_qs(url.query),
            "content_type": self.headers.get("Content-Type"),
            "tenant": self.headers.get("X-Scope-OrgID"),
            "authorization": self.headers.get("Authorization"),
            "received": time.time(),
        }
        self.store(body, meta)
        self.answer(200)

    def connect(self, body):
        ctype = self.headers.get("Content-Type")
        version = self.headers.get("Connect-Protocol-Version")
        if ctype != "application/proto" or version != "1":
            self.answer(415 if ctype != "application/proto" else 400,
                        f"Content-Type {ctype}, Connect-Protocol-Version {version}")
            return
        try:
            series = push_request(body)
            spans = [[pprof_span(raw) for raw in samples] for _, samples in series]
        except (ValueError, UnicodeDecodeError, OSError, EOFError) as e:
            self.answer(400, f"not a PushRequest: {e}")
            return
        with self.server.lock:
            self.server.requests += 1
            request = self.server.requests
        for (labels, samples), sp in zip(series, spans):
            for raw, (t, d) in zip(samples, sp):
                self.store(raw, {
                    "api": "connect", "request": request, "labels": labels,
                    "time_nanos": t, "duration_nanos": d,
                    "content_type": ctype, "connect_version": version,
                    "tenant": self.headers.get("X-Scope-OrgID"),
                    "authorization": self.headers.get("Authorization"),
                    "received": time.time(),
                })
        # PushResponse {}: no field, no byte
        self.send_response(200)
        self.send_header("Content-Type", "application/proto")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def answer_proto(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def otlp(self, body):
        ctype = self.headers.get("Content-Type")
        encoding = self.headers.get("Content-Encoding")
        if ctype != "application/x-protobuf":
            self.answer_proto(415, rpc_status(3, f"Content-Type {ctype}"))
            return
        if encoding == "gzip":
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError) as e:
                self.answer_proto(400, rpc_status(3, f"not gzip: {e}"))
                return
        elif encoding:
            self.answer_proto(415, rpc_status(3, f"Content-Encoding {encoding}"))
            return
        self.store(body, {
            "api": "otlp", "path": urllib.parse.urlsplit(self.path).path,
            "content_type": ctype, "content_encoding": encoding,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "received": time.time(),
        })
        self.answer_proto(200, PARTIAL if self.server.partial else b"")

    def log_message(self, fmt, *args):
        pass


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    status = int(opts.get("--status", 200))
    os.makedirs(out, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.dir = out
    srv.status = status
    srv.fail_first = int(opts.get("--fail-first", 0))
    srv.partial = opts.get("--partial", "0") == "1"
    srv.pushes = srv.failed = 0
    srv.lock = threading.Lock()
    # numbering goes on after a restart: pushes already stored stay
    srv.count = max([int(n[:6]) for n in os.listdir(out)
                     if n.endswith(".json") and n[:6].isdigit()] + [0])
    srv.requests = max([json.load(open(os.path.join(out, n))).get("request", 0)
                        for n in os.listdir(out) if n.endswith(".json") and n[:6].isdigit()] + [0])
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
