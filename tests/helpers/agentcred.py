#!/usr/bin/python3
"""agentcred.py - sign and send agent requests as docs/api.md "Agent
credentials" says, written from the document (not from the C code), so
the tests check the scheduler against the specification.

As a module: node_key(secret, node), read_key_file(path),
sign(key, node, method, target, body, ts_ms=None, nonce=None) -> header
value, request(url, method, target, key, node, body=None, ...).

As a command:
  agentcred.py request URL METHOD TARGET (--secret FILE | --key FILE)
               --node NODE [--body TEXT] [--skew-ms MS] [--times N]
               [--legacy] [--claim NODE]
    sends one signed request (--times N: the very same bytes N times, a
    replay) and prints, per response, "STATUS BODY" on one line.
    --skew-ms signs with a clock that far off; --legacy sends the static
    credential of before (Agent NODE:HMAC(secret, NODE)); --claim names
    another node in the credential while signing with NODE's key.
  agentcred.py key (--secret FILE) --node NODE
    prints the node's key in hex.
"""
import argparse
import hashlib
import hmac
import os
import sys
import time
import urllib.error
import urllib.request

LABEL_KEY = b"lockstep-node-key:"
LABEL_REQ = "lockstep-agent-v1"


def read_secret(path):
    with open(path, "rb") as f:
        return f.read().rstrip(b" \t\r\n")


def node_key(secret, node):
    return hmac.new(secret, LABEL_KEY + node.encode(), hashlib.sha256).digest()


def read_key_file(path):
    """The node and its key (bytes) from a node key file."""
    fields = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            k, v = line.split("=", 1)
            fields[k.strip()] = v.strip()
    return fields["node"], bytes.fromhex(fields["key"])


def canonical(node, method, target, body, ts_ms, nonce):
    digest = hashlib.sha256(body).hexdigest()
    return "\n".join([LABEL_REQ, node, method, target, digest, str(ts_ms),
                      nonce]).encode()


def sign(key, node, method, target, body=b"", ts_ms=None, nonce=None,
         claim=None):
    if ts_ms is None:
        ts_ms = int(time.time() * 1000)
    if nonce is None:
        nonce = os.urandom(16).hex()
    mac = hmac.new(key, canonical(claim or node, method, target, body, ts_ms,
                                  nonce), hashlib.sha256).hexdigest()
    return "Agent %s:%d:%s:%s" % (claim or node, ts_ms, nonce, mac)


def send(url, method, target, auth, body=None):
    """(status, body text) of one request."""
    headers = {"Authorization": auth}
    if body is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url.rstrip("/") + target, data=body,
                                 method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def request(url, method, target, key, node, body=None, skew_ms=0, times=1,
            claim=None):
    data = body.encode() if body is not None else None
    auth = sign(key, node, method, target, data or b"",
                ts_ms=int(time.time() * 1000) + skew_ms, claim=claim)
    return [send(url, method, target, auth, data) for _ in range(times)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["request", "key"])
    p.add_argument("args", nargs="*")
    p.add_argument("--secret")
    p.add_argument("--key")
    p.add_argument("--node", required=True)
    p.add_argument("--body")
    p.add_argument("--skew-ms", type=int, default=0)
    p.add_argument("--times", type=int, default=1)
    p.add_argument("--legacy", action="store_true")
    p.add_argument("--claim")
    a = p.parse_args()
    if a.key:
        knode, key = read_key_file(a.key)
        if knode != a.node and not a.claim:
            sys.exit("key file is for node %s, not %s" % (knode, a.node))
    else:
        key = node_key(read_secret(a.secret), a.node)
    if a.cmd == "key":
        print(key.hex())
        return 0
    url, method, target = a.args
    if a.legacy:
        mac = hmac.new(read_secret(a.secret), a.node.encode(),
                       hashlib.sha256).hexdigest()
        data = a.body.encode() if a.body is not None else None
        out = [send(url, method, target, "Agent %s:%s" % (a.node, mac), data)]
    else:
        out = request(url, method, target, key, a.node, a.body, a.skew_ms,
                      a.times, a.claim)
    for status, text in out:
        print(status, text.replace("\n", " "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
