#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Receivers of sfprof agent's pushes that misbehave, for delivery_test.py.

usage: receivers.py PORT DIR MODE [--byte-secs SECS]

Listens on 127.0.0.1:PORT and answers each POST by MODE:
  ok        200 (keep-alive)
  hang      reads the request and never answers
  odd503    503 for payloads whose body's SHA-256 ends in an odd byte, 200 for the others
  odd400    the same with 400
  close200  sends the status line "HTTP/1.1 200 OK" and closes
  trickle   sends the whole answer (200, headers, a 10-byte body) one byte
            every --byte-secs (default 1)
and 503 to anything while DIR/pause exists, no answer while DIR/hang exists. Each request is a line of
DIR/log.jsonl: the payload's identity (its name, from and until: of an OTLP
request, posted to .../v1development/profiles, "otlp" and its profiles' time), the
SHA-256 of its body, the status sent (0: none) and whether the status line
went out whole (taken: the server has it). Prints "ready" once listening.
"""
import gzip
import hashlib
import json
import os
import socketserver
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import otlp_decode  # noqa: E402  (tests/integration/)


def otlp_identity(body):
    """'otlp|FROM|UNTIL' of an OTLP request: its profiles' start and end, in seconds."""
    try:
        req = otlp_decode.decode_request(body)
        spans = {(p.get('time_unix_nano', 0), p.get('duration_nano', 0))
                 for _, p in otlp_decode.profiles(req)}
    except otlp_decode.DecodeError as e:
        return f'otlp|undecodable: {e}'
    if len(spans) != 1:
        return f'otlp|{len(spans)} spans: {sorted(spans)}'
    t, d = spans.pop()
    return f'otlp|{t // 10**9}|{(t + d) // 10**9}'


def identity(target, headers, body):
    """The payload's identity: an /ingest query's name, from and until, or an OTLP request's span."""
    if urllib.parse.urlsplit(target).path.endswith('/v1development/profiles'):
        if headers.get('content-encoding') == 'gzip':
            body = gzip.decompress(body)
        return otlp_identity(body)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
    return '|'.join(q.get(k, [''])[0] for k in ('name', 'from', 'until'))


class Handler(socketserver.StreamRequestHandler):
    def read_request(self):
        line = self.rfile.readline(65536)
        if not line:
            return None
        headers = {}
        while True:
            h = self.rfile.readline(65536)
            if h in (b'\r\n', b'\n', b''):
                break
            k, _, v = h.decode('latin-1').partition(':')
            headers[k.strip().lower()] = v.strip()
        body = self.rfile.read(int(headers.get('content-length', '0')))
        self.headers = headers
        return line.decode('latin-1').split(' ')[1], body

    def log(self, target, body, status, taken):
        rec = {'id': identity(target, self.headers, body),
               'sha': hashlib.sha256(body).hexdigest(), 'status': status, 'taken': taken,
               't': time.time()}
        with self.server.lock:
            with open(os.path.join(self.server.dir, 'log.jsonl'), 'a') as f:
                f.write(json.dumps(rec) + '\n')

    def handle(self):
        mode = self.server.mode
        while True:
            try:
                req = self.read_request()
            except (OSError, ValueError):
                return
            if req is None:
                return
            target, body = req
            if os.path.exists(os.path.join(self.server.dir, 'pause')):
                self.wfile.write(b'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n')
                self.log(target, body, 503, False)
                continue
            if mode == 'hang' or os.path.exists(os.path.join(self.server.dir, 'hang')):
                self.log(target, body, 0, False)
                while self.connection.recv(4096):
                    pass
                return
            if mode in ('odd503', 'odd400') and hashlib.sha256(body).digest()[-1] & 1:
                code = 503 if mode == 'odd503' else 400
                self.wfile.write(b'HTTP/1.1 %d No\r\nContent-Length: 0\r\n\r\n' % code)
                self.log(target, body, code, False)
                continue
            if mode == 'close200':
                self.wfile.write(b'HTTP/1.1 200 OK\r\n')
                self.wfile.flush()
                self.log(target, body, 200, True)
                return
            if mode == 'trickle':
                answer = b'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789'
                status_end = answer.index(b'\r\n') + 2
                for i in range(len(answer)):
                    try:
                        self.connection.sendall(answer[i:i + 1])
                    except OSError:
                        break
                    if i + 1 == status_end:
                        self.log(target, body, 200, True)
                    time.sleep(self.server.byte_secs)
                return
            self.wfile.write(b'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')
            self.wfile.flush()
            self.log(target, body, 200, True)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    port, out, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    byte_secs = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == '--byte-secs' else 1.0
    os.makedirs(out, exist_ok=True)
    srv = Server(('127.0.0.1', port), Handler)
    srv.dir, srv.mode, srv.byte_secs, srv.lock = out, mode, byte_secs, threading.Lock()
    print('ready', flush=True)
    srv.serve_forever()


if __name__ == '__main__':
    main()
