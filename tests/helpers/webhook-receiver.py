#!/usr/bin/python3
"""webhook-receiver.py - an alert webhook receiver on loopback for tests.

    webhook-receiver.py --port PORT --out FILE [--path /hook] [--status 200]

Listens on 127.0.0.1:PORT (0: a free port) with Python's http.server and
appends the body of every POST to --path as one line of FILE (the JSON
alert, compacted), then answers --status. The port it listens on is
written to FILE.port once it listens. A POST to another path gets 404 and
is logged to FILE.bad. SIGTERM stops it.
"""
import argparse
import http.server
import json
import os
import signal
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--path", default="/hook")
    ap.add_argument("--status", type=int, default=200)
    a = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            if self.path != a.path:
                with open(a.out + ".bad", "a") as f:
                    f.write("%s %s\n" % (self.path, body.decode()))
                self.send_response(404)
                self.end_headers()
                return
            line = json.dumps(json.loads(body), sort_keys=True)
            with open(a.out, "a") as f:
                f.write(line + "\n")
            self.send_response(a.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, fmt, *args):
            sys.stderr.write("webhook-receiver: " + (fmt % args) + "\n")

    srv = http.server.HTTPServer(("127.0.0.1", a.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tmp = a.out + ".port.tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.out + ".port")
    srv.serve_forever()


if __name__ == "__main__":
    main()
