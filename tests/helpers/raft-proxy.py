#!/usr/bin/python3
"""raft-proxy.py - the network between replicas, which a test can cut.

    raft-proxy.py LISTEN_PORT:TARGET_PORT... --ready FILE

Forwards 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT for each pair:
replica i advertises LISTEN_PORT (its replica_address, what the others
connect to) and binds TARGET_PORT (replica_bind_address). Every
connection a replica opens to another starts with libraft's handshake
(u64 protocol, u64 the sender's id, u64 the length of its address, the
address), so the proxy knows who is at each end: the sender from the
handshake, the receiver from the port.

SIGUSR1 cuts the replica whose id is in the file FILE.cut off from the
others, both ways: bytes of its connections are no longer forwarded, and
new connections to or from it are accepted but never connected through
(a dead switch: nothing is refused or reset). SIGUSR2 heals: held
connections are closed, so the replicas reconnect. SIGTERM stops it.
FILE is written once every port listens.
"""
import os
import selectors
import signal
import socket
import struct
import sys

cut = None       # the replica id cut off, or None
heal = False
cut_file = None


def on_usr1(signum, frame):
    global cut
    with open(cut_file) as f:
        cut = int(f.read().strip())


def on_usr2(signum, frame):
    global cut, heal
    cut = None
    heal = True


def main():
    global cut_file, heal
    pairs, ready = [], None
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "--ready":
            ready = args.pop(0)
        else:
            lp, tp = a.split(":")
            pairs.append((int(lp), int(tp)))
    cut_file = ready + ".cut"
    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGUSR2, on_usr2)
    signal.signal(signal.SIGTERM, lambda s, f: os._exit(0))

    sel = selectors.DefaultSelector()
    listeners = {}
    for i, (lp, tp) in enumerate(pairs):
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", lp))
        lst.listen(128)
        listeners[lst] = (i + 1, tp)
        sel.register(lst, selectors.EVENT_READ, None)
    with open(ready + ".tmp", "w") as f:
        f.write("ready\n")
    os.replace(ready + ".tmp", ready)

    # conn -> {"peer": socket or None, "to": replica id, "frm": id or None,
    #          "buf": bytes read before the handshake was complete}
    conns = {}

    def close(s):
        st = conns.pop(s, None)
        for x in (s, st["peer"] if st else None):
            if x is None:
                continue
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            conns.pop(x, None)
            x.close()

    def hold(s):
        # Leave the bytes unread (nothing crosses) and stop watching, so
        # that a readable socket does not spin the loop.
        for x in (s, conns[s]["peer"]):
            if x is None or x not in conns:
                continue
            conns[x]["held"] = True
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass

    def involved(st):
        return cut is not None and (st["to"] == cut or st["frm"] == cut)

    while True:
        if heal:
            heal = False
            for s in list(conns):
                if s in conns and conns[s]["held"]:
                    close(s)
        try:
            events = sel.select(timeout=0.05)
        except InterruptedError:
            continue
        for key, _ in events:
            s = key.fileobj
            if s in listeners:
                c, _ = s.accept()
                to, tp = listeners[s]
                conns[c] = {"peer": None, "to": to, "frm": None, "buf": b"",
                            "tp": tp, "held": False, "up": False}
                sel.register(c, selectors.EVENT_READ, None)
                continue
            st = conns.get(s)
            if st is None:
                continue
            if st["held"] or involved(st):
                hold(s)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                close(s)
                continue
            if st["up"]:
                try:
                    st["peer"].sendall(data)
                except OSError:
                    close(s)
                continue
            # The handshake: who is calling.
            st["buf"] += data
            if len(st["buf"]) < 24:
                continue
            _, frm, _ = struct.unpack_from("<QQQ", st["buf"])
            st["frm"] = frm
            if involved(st):
                hold(s)
                continue
            try:
                u = socket.create_connection(("127.0.0.1", st["tp"]),
                                             timeout=2)
                u.sendall(st["buf"])
            except OSError:
                close(s)
                continue
            st["up"], st["peer"], st["buf"] = True, u, b""
            conns[u] = {"peer": s, "to": st["to"], "frm": frm, "buf": b"",
                        "tp": 0, "held": False, "up": True}
            sel.register(u, selectors.EVENT_READ, None)


if __name__ == "__main__":
    main()
