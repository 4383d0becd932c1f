#!/usr/bin/python3
"""bench.py - submission throughput and dispatch latency of a live cluster.

Run through bench/run.sh, which starts a 4-node local cluster. Figures are
printed with a baseline measured in the same run, because these machines
are shared and noisy: absolute numbers mean little, ratios travel.

  submit (serial)     one keep-alive connection, one request in flight
  submit (pipelined)  one keep-alive connection, WINDOW requests in flight
                      (HTTP/1.1 pipelining; the scheduler group-commits
                      everything read in one loop iteration)
  baseline            GET /v1/health on the same connection: the cost of
                      the HTTP round trip without any database write
  dispatch            submit reply -> first rank's process running, on an
                      idle cluster, 50 jobs one after the other
  baseline            the same command started directly with fork/exec
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


class Conn:
    """A minimal HTTP/1.1 keep-alive client over a Unix socket that can
    pipeline requests (http.client cannot)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def send(self, method, path, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        head = "%s %s HTTP/1.1\r\nHost: lockstep\r\n" % (method, path)
        if body is not None:
            head += "Content-Type: application/json\r\n"
        head += "Content-Length: %d\r\n\r\n" % len(data)
        self.sock.sendall(head.encode() + data)

    def recv(self):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("scheduler closed the connection")
            self.buf += chunk
        head, rest = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("scheduler closed the connection")
            rest += chunk
        self.buf = rest[length:]
        return status, rest[:length]

    def request(self, method, path, body=None):
        self.send(method, path, body)
        return self.recv()


def spec(i, nodes):
    # More nodes than the cluster has: the job stays PENDING, so the
    # benchmark measures submission, not the cluster running 10,000 jobs.
    # It says it waits for nodes: a scheduler that has been up for its
    # node timeout refuses a job no set of its nodes could hold (422).
    return {"version": 1, "name": "bench-%d" % i, "argv": ["true"],
            "nodes": nodes, "wait_for_nodes": True}


def bench_submit(sock, n, window, nodes):
    c = Conn(sock)
    t0 = time.perf_counter()
    sent = done = 0
    while done < n:
        while sent < n and sent - done < window:
            c.send("POST", "/v1/jobs", spec(sent, nodes))
            sent += 1
        status, body = c.recv()
        if status != 201:
            sys.exit("submit failed: %d %s" % (status, body[:200]))
        done += 1
    return n / (time.perf_counter() - t0)


def bench_health(sock, n, window):
    c = Conn(sock)
    t0 = time.perf_counter()
    sent = done = 0
    while done < n:
        while sent < n and sent - done < window:
            c.send("GET", "/v1/health")
            sent += 1
        status, _ = c.recv()
        if status != 200:
            sys.exit("health failed: %d" % status)
        done += 1
    return n / (time.perf_counter() - t0)


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def wait_file(path, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                v = f.read().strip()
            if v:
                return int(v)
        except FileNotFoundError:
            pass
        time.sleep(0.0005)
    raise TimeoutError("rank never started: %s" % path)


def get_state(c, job):
    status, body = c.request("GET", "/v1/jobs/%d" % job)
    return json.loads(body)["state"]


def bench_dispatch(sock, n, tmp):
    """Latency from the submit reply to the rank's first instruction. The
    rank writes its clock (ns since the epoch) to a file; `date` costs one
    more exec, which the baseline pays too."""
    c = Conn(sock)
    lat = []
    for i in range(n):
        mark = os.path.join(tmp, "start-%d" % i)
        body = {"version": 1, "name": "dispatch-%d" % i,
                "argv": ["sh", "-c", "date +%%s%%N > %s.tmp && mv %s.tmp %s"
                         % (mark, mark, mark)]}
        status, reply = c.request("POST", "/v1/jobs", body)
        t_reply = time.time_ns()
        if status != 201:
            sys.exit("submit failed: %d %s" % (status, reply[:200]))
        job = json.loads(reply)["id"]
        started = wait_file(mark)
        lat.append((started - t_reply) / 1e6)
        # One job at a time on an idle cluster: wait for it to finish.
        deadline = time.time() + 30
        while get_state(c, job) not in ("SUCCEEDED", "FAILED"):
            if time.time() > deadline:
                sys.exit("dispatch job %d did not finish" % job)
            time.sleep(0.01)
    return lat


def bench_direct(n, tmp):
    lat = []
    for i in range(n):
        mark = os.path.join(tmp, "direct-%d" % i)
        t0 = time.time_ns()
        p = subprocess.Popen(["sh", "-c", "date +%%s%%N > %s" % mark])
        p.wait()
        lat.append((wait_file(mark) - t0) / 1e6)
    return lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--dispatch", type=int, default=50)
    ap.add_argument("--unfit-nodes", type=int, default=1000)
    a = ap.parse_args()

    health_serial = bench_health(a.socket, 2000, 1)
    health_pipe = bench_health(a.socket, 2000, a.window)
    serial = bench_submit(a.socket, a.jobs, 1, a.unfit_nodes)
    piped = bench_submit(a.socket, a.jobs, a.window, a.unfit_nodes)
    print("submission throughput, one keep-alive client, %d jobs each:"
          % a.jobs)
    print("  serial    %8.0f submits/s   (GET /v1/health: %8.0f req/s, "
          "ratio %.2f)" % (serial, health_serial, serial / health_serial))
    print("  pipelined %8.0f submits/s   (GET /v1/health: %8.0f req/s, "
          "ratio %.2f; window %d)" % (piped, health_pipe,
                                      piped / health_pipe, a.window))

    # Clear the queue so the dispatch runs on an idle cluster.
    c = Conn(a.socket)
    status, body = c.request("GET", "/v1/jobs?state=PENDING")
    for j in json.loads(body):
        c.request("POST", "/v1/jobs/%d/cancel" % j["id"], {"version": 1})

    with tempfile.TemporaryDirectory(prefix="lockstep-bench-") as tmp:
        direct = bench_direct(a.dispatch, tmp)
        lat = bench_dispatch(a.socket, a.dispatch, tmp)
    med, p99 = statistics.median(lat), pct(lat, 99)
    dmed, dp99 = statistics.median(direct), pct(direct, 99)
    print("dispatch latency, submit reply -> first rank running, %d jobs:"
          % a.dispatch)
    print("  median %7.2f ms  p99 %7.2f ms" % (med, p99))
    print("  direct fork/exec of the same command: median %.2f ms, "
          "p99 %.2f ms (dispatch/direct median ratio %.1f)"
          % (dmed, dp99, med / dmed if dmed > 0 else float("nan")))


if __name__ == "__main__":
    main()
