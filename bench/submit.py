"""submit.py - the measuring half of bench/submit.sh (docs/scale.md).

Talks to lockstepd over TCP with a bearer token (an ordinary user, as a
researcher's script does) or over its Unix socket (TOKEN "-": the
caller's uid). Each subcommand prints one line of `key=value` figures:

  rate URL TOKEN CLIENTS COUNT     CLIENTS processes, each COUNT single
                                   submissions one after the other over one
                                   keep-alive connection: jobs/s in all
  pipe URL TOKEN COUNT DEPTH       one connection, DEPTH requests in flight
                                   (HTTP pipelining): jobs/s
  cli CLI COUNT [PAR]              COUNT `lockstep submit` processes (PAR at
                                   a time, default 1), as a shell loop does:
                                   jobs/s and ms per call
  batch URL TOKEN N                one request of N jobs: seconds, jobs/s
  fill URL TOKEN TOTAL             batches of 1000 until TOTAL were sent
  metrics URL TOKEN                the commit and pass histograms' counts
                                   and sums, and the queue
  fsync DIR COUNT [rewrite]        write 4 KiB + fdatasync COUNT times in
                                   DIR, appending (or, with rewrite, over
                                   what is there): ms each (the floor)

Every submitted job asks for 1 GPU on 1 node and sleeps (it waits behind
the job bench/submit.sh keeps the cluster busy with).
"""
import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
import urllib.parse

SPEC = {"version": 1, "argv": ["sleep", "1"], "gpus_per_node": 1,
        "name": "bench", "env": {"HOME": "/home/bench", "LANG": "C.UTF-8",
                                 "PATH": "/usr/local/bin:/usr/bin:/bin"}}


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=300)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(300)
        self.sock.connect(self.path)


def connect(url):
    if url.startswith("/"):
        return UnixConn(url)
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=300)


def headers(token):
    h = {"Content-Type": "application/json"}
    if token != "-":
        h["Authorization"] = "Bearer " + token
    return h


def post(c, token, body):
    c.request("POST", "/v1/jobs", json.dumps(body), headers(token))
    r = c.getresponse()
    data = r.read()
    if r.status != 201:
        raise RuntimeError("POST /v1/jobs: %d %s" % (r.status, data[:200]))
    return json.loads(data)


def client(args):
    url, token, count = args
    c = connect(url)
    for _ in range(count):
        post(c, token, SPEC)
    c.close()


def cmd_rate(url, token, clients, count):
    t0 = time.time()
    if clients == 1:
        client((url, token, count))
    else:
        with multiprocessing.Pool(clients) as p:
            p.map(client, [(url, token, count)] * clients)
    dt = time.time() - t0
    print("clients=%d jobs=%d jobs_per_s=%.0f" % (clients, clients * count,
                                                  clients * count / dt))


def cmd_pipe(url, token, count, depth):
    """Raw HTTP/1.1 pipelining: keep DEPTH requests in flight."""
    body = json.dumps(SPEC).encode()
    head = ("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: "
            "application/json\r\nContent-Length: %d\r\n" % len(body))
    if token != "-":
        head += "Authorization: Bearer %s\r\n" % token
    req = head.encode() + b"\r\n" + body
    if url.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(url)
    else:
        u = urllib.parse.urlparse(url)
        s = socket.create_connection((u.hostname, u.port))
    sent = done = 0
    buf = b""
    t0 = time.time()
    while done < count:
        while sent < count and sent - done < depth:
            s.sendall(req)
            sent += 1
        buf += s.recv(1 << 20)
        while True:
            i = buf.find(b"\r\n\r\n")
            if i < 0:
                break
            hdr = buf[:i].decode()
            if not hdr.startswith("HTTP/1.1 201"):
                raise RuntimeError("pipelined submit: " + hdr.split("\r\n")[0])
            n = int(hdr.lower().split("content-length:")[1].split("\r\n")[0])
            if len(buf) < i + 4 + n:
                break
            buf = buf[i + 4 + n:]
            done += 1
    dt = time.time() - t0
    s.close()
    print("depth=%d jobs=%d jobs_per_s=%.0f" % (depth, count, count / dt))


def cli_one(args):
    cli, spec_args = args
    t0 = time.time()
    subprocess.run([cli, "submit"] + spec_args, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.time() - t0


def cmd_cli(cli, count, par):
    args = [(cli, ["--gpus-per-node", "1", "--name", "bench", "--",
                   "sleep", "1"])] * count
    t0 = time.time()
    if par == 1:
        each = [cli_one(a) for a in args]
    else:
        with multiprocessing.Pool(par) as p:
            each = p.map(cli_one, args)
    dt = time.time() - t0
    each.sort()
    print("procs=%d parallel=%d jobs_per_s=%.0f call_ms_p50=%.1f"
          % (count, par, count / dt, 1000 * each[len(each) // 2]))


def cmd_batch(url, token, n):
    c = connect(url)
    jobs = [{"argv": ["sleep", "1"], "name": "b%d" % i} for i in range(n)]
    body = {"version": 1, "jobs": jobs,
            "common": {k: v for k, v in SPEC.items()
                       if k not in ("version", "argv", "name")}}
    t0 = time.time()
    r = post(c, token, body)
    dt = time.time() - t0
    assert r["count"] == n
    print("batch=%d batch_s=%.3f batch_jobs_per_s=%.0f" % (n, dt, n / dt))


def cmd_fill(url, token, total):
    c = connect(url)
    sent, t0 = 0, time.time()
    while sent < total:
        n = min(1000, total - sent)
        jobs = [{"argv": ["sleep", "1"], "name": "f%d" % (sent + i)}
                for i in range(n)]
        post(c, token, {"version": 1, "jobs": jobs,
                        "common": {"gpus_per_node": 1, "env": SPEC["env"]}})
        sent += n
    print("filled=%d fill_s=%.1f" % (sent, time.time() - t0))


def hist(text, name):
    s = c = 0.0
    for line in text.splitlines():
        if line.startswith(name + "_sum"):
            s = float(line.rsplit(" ", 1)[1])
        elif line.startswith(name + "_count"):
            c = float(line.rsplit(" ", 1)[1])
    return c, s


def cmd_metrics(url, token):
    c = connect(url)
    c.request("GET", "/metrics", headers=headers(token))
    text = c.getresponse().read().decode()
    cc, cs = hist(text, "lockstep_db_commit_duration_seconds")
    pc, ps = hist(text, "lockstep_sched_pass_duration_seconds")
    fs = 0
    for line in text.splitlines():
        if line.startswith("lockstep_db_fsyncs_total "):
            fs = float(line.split()[1])
    print("commits=%d commit_s=%.6f passes=%d pass_s=%.6f fsyncs=%d"
          % (cc, cs, pc, ps, fs))


def cmd_fsync(d, count, rewrite):
    path = os.path.join(d, "fsync-bench.dat")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    buf = b"\0" * 4096
    if rewrite:  # a file of the size written over, as a reused WAL is
        os.pwrite(fd, buf * 16, 0)
        os.fsync(fd)
    t0 = time.time()
    for i in range(count):
        os.pwrite(fd, buf, (i % 16 if rewrite else i) * 4096)
        os.fdatasync(fd)
    dt = time.time() - t0
    os.close(fd)
    os.unlink(path)
    print("fsync_ms=%.3f fsyncs_per_s=%.0f" % (1000 * dt / count,
                                               count / dt))


def main(argv):
    cmd, a = argv[1], argv[2:]
    if cmd == "rate":
        cmd_rate(a[0], a[1], int(a[2]), int(a[3]))
    elif cmd == "pipe":
        cmd_pipe(a[0], a[1], int(a[2]), int(a[3]))
    elif cmd == "cli":
        cmd_cli(a[0], int(a[1]), int(a[2]) if len(a) > 2 else 1)
    elif cmd == "batch":
        cmd_batch(a[0], a[1], int(a[2]))
    elif cmd == "fill":
        cmd_fill(a[0], a[1], int(a[2]))
    elif cmd == "metrics":
        cmd_metrics(a[0], a[1])
    elif cmd == "fsync":
        cmd_fsync(a[0], int(a[1]), len(a) > 2 and a[2] == "rewrite")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
