"""scale.py - the measuring half of bench/scale.sh (docs/scale.md).

Talks to lockstepd over its Unix socket (the caller's uid: an operator)
with one keep-alive connection; reads /proc for CPU and RSS. Subcommands
print one line of `key=value` figures each:

  submit SOCK COUNT SPEC_JSON    submit COUNT jobs, print rate and ids file
  dispatch SOCK COUNT            COUNT 1-node jobs one after the other:
                                 submit -> all ranks running, p50/p99
  sweep SOCK COUNT               COUNT 1-node jobs at once -> all SUCCEEDED
  gang SOCK NODES RPN [PID]      one NODES x RPN job: submit -> RUNNING
                                 (with PID, the scheduler's: its CPU
                                 seconds meanwhile, gang_cpu_s)
  idle SOCK PID SECONDS          CPU% and RSS of PID over SECONDS, loop lag
  wait-up SOCK N SECONDS         until N nodes are UP
  wait-running SOCK N SECONDS    until N jobs run with every rank running
  reconcile SOCK N SINCE_MS LOG SECONDS [PID]
                                 after a restart at SINCE_MS (wall ms):
                                 when lockstepd served (its LOG's
                                 "started" line) and when every one of N
                                 nodes had reported since and was UP; then
                                 the running jobs, their ranks, and how
                                 many were restarted or failed (with PID,
                                 the new scheduler's: its CPU until every
                                 node was back, cpu_ms)
  batch SOCK COUNT SPEC_JSON     COUNT jobs in batches (POST /v1/jobs with
                                 "jobs"); SPEC_JSON may hold a list of
                                 shapes, taken in turn
  loss SOCK JOBS PIDS            kill -9 the lockstep-sim processes PIDS
                                 (comma-separated), each running the one
                                 node of one of JOBS; then, per job: kill
                                 -> its node LOST (its node_lost event),
                                 and kill -> its next attempt running
  falsepos SOCK PREFIX           node_lost events of nodes not named
                                 PREFIX* (not killed): false positives
  restart-wait SOCK T0 N         after a restart begun at T0 (epoch s): ->
                                 the API answers, -> N nodes have reported
  passes SOCK                    the pass histogram: count, mean, the
                                 bucket the longest falls under
  scrape SOCK COUNT              GET /metrics COUNT times, one after the
                                 other: its wall time, p50 and max
"""
import datetime
import http.client
import json
import os
import socket
import sys
import time


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=120)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(self.path)


class Api:
    def __init__(self, sock):
        self.sock = sock
        self.c = UnixConn(sock)

    def req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": "application/json"} if data else {}
        for _ in range(3):
            try:
                self.c.request(method, path, body=data, headers=hdrs)
                r = self.c.getresponse()
                text = r.read()
                if path == "/metrics":
                    return r.status, text.decode()
                return r.status, json.loads(text) if text else None
            except (http.client.HTTPException, OSError):
                self.c.close()
                self.c = UnixConn(self.sock)
        raise RuntimeError("%s %s failed" % (method, path))

    def submit(self, spec):
        st, j = self.req("POST", "/v1/jobs", spec)
        if st != 201:
            raise RuntimeError("submit: %s %s" % (st, j))
        return j["id"]

    def job(self, jid):
        return self.req("GET", "/v1/jobs/%d" % jid)[1]


def spec(nodes=1, rpn=1, **kw):
    s = {"version": 1, "argv": ["sim"], "nodes": nodes,
         "ranks_per_node": rpn, "max_restarts": 0}
    s.update(kw)
    return s


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))] if v else 0


def now_ms():
    return time.time() * 1000


def running_ms(api, jid, timeout):
    """Wall ms at which the job's first attempt had every rank running."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            j = api.job(jid)
        except RuntimeError:  # the scheduler did not answer: keep trying
            continue
        a = j.get("attempts") or []
        if a and a[0].get("running_ms", 0) > 0:
            return a[0]["running_ms"]
        if j["state"] in ("FAILED", "CANCELLED"):
            return None
        time.sleep(0.005)
    return None


def state_light(api, jid):
    """The job's state from the newest entry of the job list (no attempts:
    what it costs does not grow with the job's ranks), or None when that
    entry is another job's."""
    st, j = api.req("GET", "/v1/jobs?all=1&limit=1")
    if st != 200 or not j or j[0]["id"] != jid:
        return None
    return j[0]["state"]


def running_ms_light(api, jid, timeout):
    """running_ms for a big job: the full job, with every rank, is read
    once it has left PLACED; polling it made the scheduler spend most of
    its time answering the poll (a 2,000 x 8 job: 60% of its CPU)."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            state = state_light(api, jid)
        except RuntimeError:
            continue
        if state is None:
            return running_ms(api, jid, end - time.time())
        if state not in ("PENDING", "PLACED"):
            return running_ms(api, jid, end - time.time())
        time.sleep(0.005)
    return None


def cmd_dispatch(api, count):
    lat = []
    for _ in range(count):
        t0 = now_ms()
        jid = api.submit(spec())
        r = running_ms(api, jid, 30)
        if r is not None:
            lat.append(r - t0)
    print("dispatch_p50_ms=%.1f dispatch_p99_ms=%.1f dispatch_n=%d"
          % (pct(lat, 50), pct(lat, 99), len(lat)))


def count_state(api, state):
    st, j = api.req("GET", "/v1/jobs?all=1&state=%s&limit=100000" % state)
    return len(j)


def cmd_sweep(api, count):
    before = count_state(api, "SUCCEEDED") + count_state(api, "FAILED")
    t0 = time.time()
    for _ in range(count):
        api.submit(spec())
    t_sub = time.time() - t0
    while count_state(api, "SUCCEEDED") + count_state(api, "FAILED") \
            < before + count:
        if time.time() - t0 > 600:
            print("sweep_timeout=1")
            return
        time.sleep(0.2)
    print("sweep_submit_s=%.2f sweep_total_s=%.2f sweep_jobs_per_s=%.0f"
          % (t_sub, time.time() - t0, count / (time.time() - t0)))


def cmd_gang(api, nodes, rpn, pid=None):
    c0 = proc_cpu(pid) if pid else 0
    t0 = now_ms()
    jid = api.submit(spec(nodes, rpn))
    r = running_ms_light(api, jid, 300)
    cpu = " gang_cpu_s=%.2f" % (proc_cpu(pid) - c0) if pid else ""
    print("gang_nodes=%d gang_ranks=%d gang_running_ms=%s%s"
          % (nodes, nodes * rpn, "%.0f" % (r - t0) if r else "timeout", cpu))


def cmd_submit(api, count, spec_json):
    s = json.loads(spec_json)
    t0 = time.time()
    ids = [api.submit(s) for _ in range(count)]
    dt = time.time() - t0
    print("submitted=%d submit_per_s=%.0f ids=%s" % (count, count / dt,
                                                     ",".join(map(str, ids))))


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0


def lag_hist(api):
    """The loop-lag histogram's cumulative buckets: {le: count}."""
    st, text = api.req("GET", "/metrics")
    b = {}
    for line in text.splitlines():
        if line.startswith("lockstep_loop_lag_seconds_bucket"):
            le = line.split('le="')[1].split('"')[0]
            b[float("inf") if le == "+Inf" else float(le)] = \
                float(line.rsplit(" ", 1)[1])
    return b


def lag_p99(h0, h1):
    d = {k: h1[k] - h0.get(k, 0) for k in h1}
    total = d.get(float("inf"), 0)
    if total <= 0:
        return 0
    for le in sorted(d):
        if d[le] >= 0.99 * total:
            return le * 1000
    return float("inf")


def cmd_idle(api, pid, secs):
    h0 = lag_hist(api)
    c0, t0 = proc_cpu(pid), time.time()
    time.sleep(secs)
    c1, t1 = proc_cpu(pid), time.time()
    h1 = lag_hist(api)
    print("cpu_pct=%.1f rss_mb=%.1f loop_lag_p99_le_ms=%g"
          % (100 * (c1 - c0) / (t1 - t0), proc_rss_mb(pid), lag_p99(h0, h1)))


def cmd_wait_up(api, n, secs):
    t0 = time.time()
    while time.time() - t0 < secs:
        st, j = api.req("GET", "/v1/nodes")
        up = sum(1 for x in j if x["state"] == "UP")
        if up >= n:
            print("nodes_up=%d up_after_s=%.1f" % (up, time.time() - t0))
            return 0
        time.sleep(0.5)
    print("nodes_up=%d up_after_s=timeout" % up)
    return 1


def running_jobs(api):
    """The RUNNING jobs, each with its full view (attempts, ranks)."""
    st, j = api.req("GET", "/v1/jobs?state=RUNNING&limit=100000")
    return [api.job(x["id"]) for x in j]


def ranks_running(job):
    a = job.get("attempts") or []
    if not a:
        return 0
    return sum(1 for r in a[-1]["ranks"] if r["state"] == "running")


def cmd_wait_running(api, n, secs):
    t0 = time.time()
    jobs = []
    while time.time() - t0 < secs:
        jobs = running_jobs(api)
        if len(jobs) >= n and all(
                ranks_running(x) == len(x["attempts"][-1]["ranks"])
                for x in jobs):
            break
        time.sleep(0.5)
    print("jobs_running=%d ranks_running=%d running_after_s=%.1f"
          % (len(jobs), sum(ranks_running(x) for x in jobs),
             time.time() - t0))
    return 0 if len(jobs) >= n else 1


def log_started_ms(log):
    """Wall ms of the last "lockstepd ... started" line of LOG; None."""
    t = None
    with open(log) as f:
        for line in f:
            if " started: " in line and "lockstepd[" in line:
                stamp = line.split(" ", 1)[0].rstrip("Z")
                d = datetime.datetime.fromisoformat(stamp).replace(
                    tzinfo=datetime.timezone.utc)
                t = d.timestamp() * 1000
    return t


def cmd_reconcile(api, n, since_ms, log, secs, pid):
    end = time.time() + secs
    done = cpu = None
    nodes = []
    while time.time() < end:
        try:
            st, nodes = api.req("GET", "/v1/nodes")
        except RuntimeError:  # not listening yet
            time.sleep(0.005)
            continue
        back = [x for x in nodes if x["last_seen_ms"] >= since_ms
                and x["state"] == "UP"]
        if len(back) >= n:
            done = now_ms()
            cpu = proc_cpu(pid) if pid else None
            break
        # The list of every node is itself work for the scheduler: poll
        # every 10 ms up to 400 nodes, then less often (100 ms at 4,000).
        time.sleep(max(0.01, n / 40000.0))
    started = log_started_ms(log)
    jobs = running_jobs(api)
    st, failed = api.req("GET", "/v1/jobs?all=1&state=FAILED&limit=100000")
    restarted = sum(1 for x in jobs if len(x["attempts"]) > 1) + len(failed)
    print("serving_ms=%s reconciled_ms=%s %snodes_back=%d jobs_running=%d "
          "ranks_running=%d restarted=%d"
          % ("%.0f" % (started - since_ms) if started else "-",
             "%.0f" % (done - since_ms) if done else "timeout",
             "cpu_ms=%.0f " % (cpu * 1000) if cpu is not None else "",
             sum(1 for x in nodes if x["last_seen_ms"] >= since_ms),
             len(jobs), sum(ranks_running(x) for x in jobs), restarted))
    return 0 if done else 1


def cmd_batch(api, count, spec_json):
    shapes = json.loads(spec_json)
    shapes = shapes if isinstance(shapes, list) else [shapes]
    sent, t0 = 0, time.time()
    while sent < count:
        n = min(1000, count - sent)
        jobs = [dict(shapes[(sent + i) % len(shapes)]) for i in range(n)]
        for j in jobs:
            j.pop("version", None)
        st, j = api.req("POST", "/v1/jobs", {"version": 1, "jobs": jobs})
        if st != 201:
            raise RuntimeError("batch: %s %s" % (st, j))
        sent += n
    print("submitted=%d batch_per_s=%.0f" % (count, count / (time.time() - t0)))


def node_events(api, kind, since_ms):
    st, j = api.req("GET", "/v1/events?kind=%s&since=%d&limit=1000"
                    % (kind, since_ms))
    return j["events"]


def cmd_loss(api, jobs, pids):
    jobs = [int(x) for x in jobs.split(",")]
    nodes = {}
    for jid in jobs:
        a = api.job(jid)["attempts"][-1]
        nodes[jid] = set(x["node"] for x in a["nodes"])
    t0 = now_ms()
    for pid in pids.split(","):
        os.kill(int(pid), 9)
    detect, recover = [], []
    pending = set(jobs)
    while pending and now_ms() - t0 < 600000:
        for ev in node_events(api, "node_lost", int(t0)):
            n = ev["subject"].split("/", 1)[1]
            for jid in jobs:
                if n in nodes[jid] and jid not in [d[0] for d in detect]:
                    detect.append((jid, ev["time_ms"] - t0))
        for jid in list(pending):
            a = api.job(jid).get("attempts") or []
            if len(a) >= 2 and a[-1].get("running_ms", 0) > 0:
                recover.append(a[-1]["running_ms"] - t0)
                pending.discard(jid)
        time.sleep(0.1)
    d = [x[1] for x in detect]
    print("loss_n=%d lost_p50_ms=%.0f lost_p99_ms=%.0f recovered=%d "
          "recover_p50_ms=%.0f recover_p99_ms=%.0f"
          % (len(jobs), pct(d, 50), pct(d, 99), len(recover),
             pct(recover, 50), pct(recover, 99)))


def cmd_falsepos(api, prefix):
    n = sum(1 for ev in node_events(api, "node_lost", 0)
            if not ev["subject"].split("/", 1)[1].startswith(prefix))
    print("false_positives=%d" % n)


def cmd_restart_wait(sock, t0, n):
    served = reconciled = None
    while time.time() - t0 < 600:
        try:
            api = Api(sock)
            st, j = api.req("GET", "/v1/nodes")
        except (RuntimeError, OSError):
            time.sleep(0.05)
            continue
        if served is None:
            served = time.time() - t0
        waiting = sum(1 for x in j if "no status since the scheduler" in
                      x.get("reason", ""))
        if len(j) >= n and waiting == 0:
            reconciled = time.time() - t0
            break
        time.sleep(0.2)
    print("restart_serving_s=%.2f restart_reconciled_s=%s"
          % (served if served is not None else -1,
             "%.2f" % reconciled if reconciled else "timeout"))


def cmd_passes(api):
    st, text = api.req("GET", "/metrics")
    b, s, c = {}, 0.0, 0.0
    for line in text.splitlines():
        name = "lockstep_sched_pass_duration_seconds"
        if line.startswith(name + "_bucket"):
            le = line.split('le="')[1].split('"')[0]
            b[float("inf") if le == "+Inf" else float(le)] = \
                float(line.rsplit(" ", 1)[1])
        elif line.startswith(name + "_sum"):
            s = float(line.rsplit(" ", 1)[1])
        elif line.startswith(name + "_count"):
            c = float(line.rsplit(" ", 1)[1])
    top = min((le for le in b if b[le] >= c), default=0)
    print("passes=%d pass_mean_ms=%.2f pass_max_le_ms=%g"
          % (c, 1000 * s / c if c else 0, top * 1000))


def cmd_scrape(api, count):
    v = []
    for _ in range(count):
        t0 = time.perf_counter()
        st, _ = api.req("GET", "/metrics")
        v.append((time.perf_counter() - t0) * 1000)
        if st != 200:
            raise RuntimeError("scrape: %s" % st)
    print("scrapes=%d scrape_p50_ms=%.2f scrape_max_ms=%.2f"
          % (count, pct(v, 50), max(v)))


def main(argv):
    cmd, api = argv[1], Api(argv[2])
    a = argv[3:]
    if cmd == "dispatch":
        cmd_dispatch(api, int(a[0]))
    elif cmd == "sweep":
        cmd_sweep(api, int(a[0]))
    elif cmd == "gang":
        cmd_gang(api, int(a[0]), int(a[1]), int(a[2]) if len(a) > 2 else None)
    elif cmd == "submit":
        cmd_submit(api, int(a[0]), a[1])
    elif cmd == "idle":
        cmd_idle(api, int(a[0]), float(a[1]))
    elif cmd == "wait-up":
        return cmd_wait_up(api, int(a[0]), float(a[1]))
    elif cmd == "wait-running":
        return cmd_wait_running(api, int(a[0]), float(a[1]))
    elif cmd == "reconcile":
        return cmd_reconcile(api, int(a[0]), float(a[1]), a[2], float(a[3]),
                             int(a[4]) if len(a) > 4 else None)
    elif cmd == "batch":
        cmd_batch(api, int(a[0]), a[1])
    elif cmd == "loss":
        cmd_loss(api, a[0], a[1])
    elif cmd == "falsepos":
        cmd_falsepos(api, a[0])
    elif cmd == "restart-wait":
        cmd_restart_wait(argv[2], float(a[0]), int(a[1]))
    elif cmd == "passes":
        cmd_passes(api)
    elif cmd == "scrape":
        cmd_scrape(api, int(a[0]))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
