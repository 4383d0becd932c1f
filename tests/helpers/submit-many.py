#!/usr/bin/python3
"""submit-many.py - many submissions, fast, from several connections.

    submit-many.py --sockets S1[,S2...] --count N [--threads T]
                   [--prefix P] [--out FILE]

Submits N jobs named P-1 .. P-N (one node, `true`, wait_for_nodes: they
queue) over T keep-alive connections (default 8) to lockstepd's Unix
socket; with several sockets (replicas), to the one that answers rather
than `not_leader`. Each submission is sent once: one that fails is
counted as failed, never retried. Writes "name id" for each acknowledged
one to FILE, and prints one line:

    submitted=N failed=F seconds=S rate=R p50_ms=A p99_ms=B
"""
import argparse
import http.client
import json
import socket
import sys
import threading
import time


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def find_leader(sockets):
    """The socket of the replica that serves (or the only one)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        for s in sockets:
            try:
                c = UnixHTTP(s)
                c.request("GET", "/v1/whoami")
                r = c.getresponse()
                r.read()
                c.close()
                if r.status == 200:
                    return s
            except OSError:
                pass
        time.sleep(0.2)
    sys.exit("no replica serves")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sockets", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--prefix", default="many")
    ap.add_argument("--out")
    a = ap.parse_args()
    leader = find_leader(a.sockets.split(","))
    lock = threading.Lock()
    nxt = [0]
    acked, lat = [], []
    failed = [0]

    def worker():
        c = UnixHTTP(leader)
        while True:
            with lock:
                nxt[0] += 1
                i = nxt[0]
            if i > a.count:
                break
            name = "%s-%d" % (a.prefix, i)
            body = json.dumps({"version": 1, "name": name, "argv": ["true"],
                               "nodes": 1, "wait_for_nodes": True})
            t0 = time.monotonic()
            try:
                c.request("POST", "/v1/jobs", body,
                          {"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                c = UnixHTTP(leader)
                with lock:
                    failed[0] += 1
                continue
            dt = (time.monotonic() - t0) * 1000
            with lock:
                if r.status == 201:
                    acked.append("%s %d" % (name, json.loads(data)["id"]))
                    lat.append(dt)
                else:
                    failed[0] += 1
        c.close()

    t0 = time.monotonic()
    th = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    secs = time.monotonic() - t0
    if a.out:
        with open(a.out, "w") as f:
            f.write("".join(x + "\n" for x in acked))
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(len(lat) * p))] if lat else 0

    print("submitted=%d failed=%d seconds=%.2f rate=%.0f p50_ms=%.1f "
          "p99_ms=%.1f" % (len(acked), failed[0], secs,
                           len(acked) / secs if secs else 0, pct(0.5),
                           pct(0.99)))


if __name__ == "__main__":
    main()
