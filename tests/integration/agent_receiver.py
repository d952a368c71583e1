#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A Pyroscope-like /ingest receiver for agent_test.py: stores each push it takes.

usage: agent_receiver.py PORT DIR [--status CODE]

Each POST /ingest?QUERY is stored as DIR/NNNNNN.bin (the body) and
DIR/NNNNNN.json (the query parameters, the headers the test checks, the
time it came), written aside and renamed so that the test never reads half
a push. --status CODE answers every push with CODE and stores nothing.
"""
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    # keep-alive, as Pyroscope's and Parca's servers do: a client that
    # reconnected for every push would pay for it there
    protocol_version = "HTTP/1.1"

    def answer(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.server.status != 200:
            self.answer(self.server.status)
            return
        if url.path != "/ingest":
            self.answer(404)
            return
        with self.server.lock:
            self.server.count += 1
            base = os.path.join(self.server.dir, "%06d" % self.server.count)
        meta = {
            "query": urllib.parse.parse_qs(url.query),
            "content_type": self.headers.get("Content-Type"),
            "tenant": self.headers.get("X-Scope-OrgID"),
            "authorization": self.headers.get("Authorization"),
            "received": time.time(),
        }
        with open(base + ".bin.tmp", "wb") as f:
            f.write(body)
        os.rename(base + ".bin.tmp", base + ".bin")
        with open(base + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".json.tmp", base + ".json")
        self.answer(200)

    def log_message(self, fmt, *args):
        pass


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    status = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--status" else 200
    os.makedirs(out, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.dir = out
    srv.status = status
    srv.lock = threading.Lock()
    # numbering goes on after a restart: pushes already stored stay
    srv.count = max([int(n[:6]) for n in os.listdir(out) if n.endswith(".json")] + [0])
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
