#!/usr/bin/python3
"""tcp-proxy.py - a TCP forwarder a test can cut, to partition an agent.

    tcp-proxy.py --target HOST:PORT --port-file FILE

Listens on 127.0.0.1 (a free port, written to FILE) and forwards every
connection to the target. SIGUSR1 starts a partition: bytes are no longer
forwarded in either direction and new connections are accepted but never
connected through, so clients hang as they would behind a dead switch
(nothing is refused or reset). SIGUSR2 ends it: held connections are
closed, so clients reconnect. SIGTERM stops the proxy.
"""
import argparse
import os
import selectors
import signal
import socket

blocked = False
heal = False


def on_usr1(signum, frame):
    global blocked
    blocked = True


def on_usr2(signum, frame):
    global blocked, heal
    blocked = False
    heal = True


def main():
    global heal
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    host, port = a.target.rsplit(":", 1)
    target = (host, int(port))

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGUSR2, on_usr2)
    signal.signal(signal.SIGTERM, lambda s, f: os._exit(0))

    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", 0))
    lst.listen(128)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % lst.getsockname()[1])
    os.replace(tmp, a.port_file)

    sel = selectors.DefaultSelector()
    sel.register(lst, selectors.EVENT_READ, None)
    peers = {}      # socket -> its partner (None while held unconnected)

    def close(s):
        for x in (s, peers.get(s)):
            if x is None:
                continue
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            peers.pop(x, None)
            x.close()

    while True:
        if heal:
            heal = False
            for s in list(peers):
                if s in peers:
                    close(s)
        try:
            events = sel.select(timeout=0.05)
        except InterruptedError:
            continue
        for key, _ in events:
            s = key.fileobj
            if s is lst:
                c, _ = lst.accept()
                if blocked:
                    peers[c] = None     # held: never connected through
                    continue
                try:
                    u = socket.create_connection(target, timeout=2)
                except OSError:
                    c.close()
                    continue
                peers[c], peers[u] = u, c
                sel.register(c, selectors.EVENT_READ, None)
                sel.register(u, selectors.EVENT_READ, None)
                continue
            if s not in peers:
                continue
            if blocked:
                continue        # leave the bytes unread: nothing crosses
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                close(s)
                continue
            try:
                peers[s].sendall(data)
            except OSError:
                close(s)


if __name__ == "__main__":
    main()
