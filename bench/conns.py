#!/usr/bin/python3
"""conns.py - how many idle connections lockstepd holds, and its RSS
per connection.

Usage: bench/conns.py BUILD_DIR [N]

Starts build/scheduler/lockstepd on loopback in a temporary directory
(long deadlines, max_connections from the descriptor limit), opens N
(default 5000) TCP connections that send nothing, and prints the
scheduler's open connections (from /metrics over the Unix socket), its
descriptors and RSS before and after, and the RSS per connection. Stops
the scheduler it started (by PID) and removes the directory.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def metric(sock, name):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main():
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    d = tempfile.mkdtemp(prefix="ls-bench.")
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write("bench-secret-0123456789abcdef0123456789\n")
    os.chmod(secret, 0o600)
    sock = os.path.join(d, "sock")
    port_file = os.path.join(d, "port")
    os.mkdir(os.path.join(d, "state"))
    p = subprocess.Popen([
        os.path.join(build, "scheduler", "lockstepd"),
        "-o", "listen=127.0.0.1:0", "-o", "port_file=" + port_file,
        "-o", "tls=off", "-o", "socket=" + sock, "-o", "state_dir=" + d + "/state",
        "-o", "cluster_secret_file=" + secret, "-o", "log_level=warn",
        "-o", "http_header_timeout_ms=600000",
        "-o", "http_idle_timeout_ms=600000",
        "-o", "max_connections_per_peer=0"],
        stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT)
    conns = []
    try:
        for _ in range(100):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.1)
        port = int(open(port_file).read())
        time.sleep(0.5)
        rss0, fd0 = rss_kib(p.pid), nfds(p.pid)
        limit = metric(sock, 'lockstep_http_connection_limit{limit="max"}')
        t0 = time.monotonic()
        for i in range(n):
            s = socket.socket()
            s.connect(("127.0.0.1", port))
            conns.append(s)
        time.sleep(1.0)
        open_now = metric(sock, 'lockstep_http_connections{class="user"}')
        rss1, fd1 = rss_kib(p.pid), nfds(p.pid)
        print("max_connections (from RLIMIT_NOFILE): %d" % limit)
        print("connections opened: %d in %.2f s; held by lockstepd: %d"
              % (n, time.monotonic() - t0, open_now))
        print("descriptors: %d before, %d with them" % (fd0, fd1))
        print("RSS: %d KiB before, %d KiB with them: %.2f KiB per connection"
              % (rss0, rss1, (rss1 - rss0) / max(open_now, 1)))
        for s in conns:
            s.close()
        conns = []
        time.sleep(1.0)
        print("after closing them: %d connections, %d descriptors, RSS %d KiB"
              % (metric(sock, 'lockstep_http_connections{class="user"}'),
                 nfds(p.pid), rss_kib(p.pid)))
    finally:
        for s in conns:
            s.close()
        p.terminate()
        p.wait()
        subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
