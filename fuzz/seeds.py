#!/usr/bin/env python3
"""seeds.py - seed the fuzz corpora from the tests and the docs

    fuzz/seeds.py OUT_DIR

Every JSON text in the unit tests (C string literals, adjacent ones
joined), the integration tests (single-quoted shell words) and the docs
(```json blocks) goes to the seeds of the harness whose parser reads
messages of its shape (OUT_DIR/<harness>/seed-<sha1>); so do the kernel
log fixtures, the example configurations, what the fake nvidia-smi of
each GPU test answers, the API's routes as HTTP requests, and the files
of an attempt directory in their writers' formats. OUT_DIR/json.dict is
the dictionary of every JSON field name the parsers know. OUT_DIR is
emptied first; fuzz/run.sh calls this before every run, so the seeds
follow the tests. (The committed corpus, fuzz/corpus/<harness>/, holds
the regression input of every finding fixed.)
"""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def c_literals(text):
    """The string literals of C source text, adjacent ones joined."""
    out = []
    lit = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
    pos = 0
    cur = None
    while True:
        m = lit.search(text, pos)
        if m is None:
            break
        between = text[pos:m.start()]
        # Joined only across blanks, newlines and line continuations.
        if cur is not None and re.fullmatch(r"[\s\\]*", between):
            cur += m.group(1)
        else:
            if cur is not None:
                out.append(cur)
            cur = m.group(1)
        pos = m.end()
    if cur is not None:
        out.append(cur)
    return [c_unescape(s) for s in out]


def c_unescape(s):
    def rep(m):
        e = m.group(1)
        table = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\",
                 '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f",
                 "v": "\v", "?": "?"}
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0] in "01234567" and len(e) > 1:
            return chr(int(e, 8))
        return table.get(e, e)
    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", rep, s)


def json_texts():
    """(text, parsed) of every JSON object or array in tests and docs."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "*.c"))):
        found += c_literals(open(path, errors="replace").read())
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "integration",
                                              "*.sh"))):
        found += re.findall(r"'(\{[^']*\}|\[[^']*\])'",
                            open(path, errors="replace").read())
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        found += re.findall(r"```json\n(.*?)```",
                            open(path, errors="replace").read(), re.S)
    out = []
    for t in found:
        t = t.strip()
        if not t or t[0] not in "{[":
            continue
        try:
            v = json.loads(t)
        except ValueError:
            # A fragment of an object ("key": value, ...) still seeds.
            try:
                v = json.loads("{" + t + "}")
                t = "{" + t + "}"
            except ValueError:
                continue
        out.append((t, v))
    return out


def keys_of(v):
    if isinstance(v, dict):
        return set(v)
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return set(v[0])
    return set()


def classify(v):
    """The harnesses whose parser reads messages shaped like v."""
    k = keys_of(v)
    out = []
    if "argv" in k and "user" not in k:
        out.append(("job_spec", b""))
    if "agent_id" in k or "ranks" in k or "health" in k:
        out.append(("agent_status", b""))
    if "jobs" in k and "gen" in k or "master_addr" in k:
        out.append(("agent_work", b"\x00"))
    if "heartbeat_ms" in k or "lease_ms" in k or "witnesses" in k:
        out.append(("agent_work", b"\x01"))
    if "error" in k:
        out.append(("agent_work", b"\x80"))
    if "data" in k or "owner" in k:
        for sel, want in ((0, "nodes"), (1, "owner"), (2, "id")):
            if want in k:
                out.append(("relay", bytes([sel])))
    if "status" in k and "code" in k:
        out.append(("health_output", b"\x00"))
    if "step" in k and ("time_ms" in k or "acks" in k or "sections" in k):
        out.append(("progress", b""))
    if k:
        out.append(("cli_reply", None))
    return out


# fuzz_cli_reply.c's cmdlines[], by what their first reply looks like.
CLI_LISTS = [0, 1, 3, 7, 9, 13]          # jobs, history, nodes, events, tokens
CLI_JOB = [5, 6, 15, 17, 25, 27, 28, 29]  # show, cancel, hold, logs, submit
CLI_NODE = [8, 21, 22, 23, 24]           # node, cordon, uncordon, drain, ack
CLI_OTHER = [11, 12, 14, 20]             # stats, whoami, token create, ckpt


def cli_cmds(v):
    k = keys_of(v)
    if isinstance(v, list):
        return CLI_LISTS
    if "error" in k:
        return [0, 5, 8, 15, 21, 27]
    if "id" in k and "state" in k:
        return CLI_JOB
    if "state" in k and ("name" in k or "node" in k):
        return CLI_NODE
    return CLI_OTHER


def http_seeds():
    """Requests over the API's routes, one at a time and pipelined."""
    routes = []
    api = open(os.path.join(ROOT, "scheduler", "api.c")).read()
    for m, p in re.findall(r'\{ "(GET|POST)", "(/[^"]*)"', api):
        routes.append((m, p.replace("{}", "7")))
    body = b'{"version":1,"argv":["sh","-c","true"],"nodes":1}'
    reqs = []
    for m, p in routes:
        if m == "POST":
            reqs.append(b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: "
                        b"application/json\r\nContent-Length: %d\r\n\r\n%s" %
                        (m.encode(), p.encode(), len(body), body))
        else:
            reqs.append(b"%s %s?node=n1&limit=5 HTTP/1.1\r\nHost: x\r\n"
                        b"Authorization: Bearer lst_x\r\n\r\n" %
                        (m.encode(), p.encode()))
    seeds = [b"\x00" + r for r in reqs]
    chunked = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
               b"chunked\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n")
    seeds.append(b"\x00" + chunked)
    seeds.append(b"\x03" + chunked)
    seeds.append(b"\x00" + b"".join(reqs[:6]))
    seeds.append(b"\x02" + b"".join(reqs[:40]))
    seeds.append(b"\x00GET /v1/health HTTP/1.0\r\n\r\n")
    seeds.append(b"\x00POST /v1/jobs HTTP/1.1\r\nExpect: 100-continue\r\n"
                 b"Content-Length: 2\r\n\r\n{}")
    seeds.append(b"\x00GET /defer HTTP/1.1\r\n\r\nGET /v1/health HTTP/1.1"
                 b"\r\n\r\n")
    # over TCP, restricted: an agent's request, then a user's
    seeds.append(b"\x20GET /v1/agent/work?node=n1 HTTP/1.1\r\n"
                 b"Authorization: Agent n1:00ff\r\n\r\n"
                 b"GET /v1/jobs HTTP/1.1\r\n\r\n")
    return seeds


# The many-ranks log read (common/proto_logs.h): a job of 2 x 4 ranks,
# then frames of its output (one cut by the limit: settings bit 7), then
# frames that lie (a rank not asked for, a length past the body).
LOGS_JOB = (b'{"id":7,"state":"RUNNING","reason":"","attempt":1,'
            b'"nodes":2,"ranks_per_node":4}')
LOGS_FRAMES = [
    b"\x80rank=0 start=0 size=9 len=4\nstep\n",
    b"\x00rank=0 start=4 size=9 len=5\n 1\nab\nrank=3 start=4096 "
    b"size=4100 len=4\nend\n\n",
    b"\x00rank=9 start=0 size=1 len=1\nx\n",
    b"\x00rank=1 start=0 size=99 len=99\nshort\n",
]


def logs_seeds():
    """(harness, bytes): `lockstep logs` against many-ranks replies."""
    sep, out = b"\n\xff\xff\n", []
    for cmd in (25, 29):   # logs 7; logs 7 --json --attempt 1
        for k in range(1, len(LOGS_FRAMES) + 1):
            out.append(("cli_reply", bytes([cmd, 0]) + LOGS_JOB + sep +
                        sep.join(LOGS_FRAMES[:k])))
    return out


def text_seeds():
    """(harness, bytes) of the non-JSON inputs."""
    out = logs_seeds()
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures",
                                              "kmsg", "*"))):
        text = open(path, "rb").read()
        # the file at --max-level 3 and 7, and its messages one by one
        out.append(("kmsg", b"\x0c" + text[:8192]))
        out.append(("kmsg", b"\x1c" + text[:8192]))
        for line in text.split(b"\n")[:200]:
            if b";" in line:
                out.append(("kmsg", b"\x01" + line.split(b";", 1)[1]))
    allow = open(os.path.join(ROOT, "agent", "kmsg-allowlist.txt"),
                 "rb").read()
    out.append(("kmsg", b"\x02" + allow[:8192]))
    for path in sorted(glob.glob(os.path.join(ROOT, "deploy", "examples",
                                              "*.conf"))):
        out.append(("config", open(path, "rb").read()))
    # What the fake nvidia-smi of each GPU test scenario answers.
    fields = ("index,pci.bus_id,uuid,ecc.mode.current,"
              "ecc.errors.uncorrected.volatile.total,retired_pages.pending,"
              "%s.hw_thermal_slowdown,%s.hw_power_brake_slowdown,"
              "temperature.gpu,power.draw")
    fmt = "--format=csv,noheader,nounits"
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "helpers",
                                              "fake-nvidia-smi-*"))):
        if path.endswith("-hang"):
            continue
        answers = []
        for q in ("--query-gpu=" + fields % (("clocks_event_reasons",) * 2),
                  "--query-gpu=" + fields % (("clocks_throttle_reasons",) * 2),
                  "--query-remapped-rows=gpu_bus_id,remapped_rows.pending,"
                  "remapped_rows.failure"):
            try:
                r = subprocess.run(["sh", path, q, fmt], capture_output=True,
                                   timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                answers = []
                break
            code = {0: 0, 1: 1, 6: 2, 9: 3}.get(r.returncode, 1)
            text = r.stdout + (r.stderr if r.returncode else b"")
            answers.append((code, text))
        if len(answers) == 3:
            for (c1, t1) in answers[:2]:
                c2, t2 = answers[2]
                out.append(("gpu_csv", bytes([c1 | c2 << 3 | 0x40, 8]) +
                            t1 + b"\n\xff\xff\n" + t2))
                out.append(("gpu_csv", bytes([c1, 8]) + t1))
    return out


# fuzz_api_request.c's routes[], by index.
API_POST_BODIES = [
    # (keys that mark a body for the route, route indexes)
    ({"argv"}, [0]),
    ({"agent_id"}, [27]),
    ({"reason"}, [15, 16, 18, 19]),
    ({"user"}, [22]),
    ({"attempt", "step", "rank"}, [9, 10]),
    ({"kind"}, [8]),
    ({"hold"}, [7]),
    ({"checkpoint"}, [4, 7]),
    ({"nodes", "data"}, [30]),
    ({"owner"}, [31]),
    ({"id", "data"}, [33]),
    ({"id", "error"}, [33]),
]
API_QUERIES = [
    (1, b"state=RUNNING&user=root&limit=10&all=1"),
    (2, b"since=0&limit=3&user=alice&state=FAILED"),
    (11, b"rank=0&attempt=1&stream=err&offset=0&limit=4096"),
    (20, b"job=1&node=n1&kind=job_submitted&limit=5&since=0"),
    (28, b"node=n1&gen=0&wait_ms=0"),
    (32, b"node=n1&wait_ms=0"),
    (13, b"state=UP"),
]


def api_seeds(texts):
    out = []
    for text, v in texts:
        if not isinstance(v, dict):
            continue
        k = set(v)
        for want, idxs in API_POST_BODIES:
            if want <= k:
                for i in idxs:
                    out.append(bytes([i, 0]) + text.encode())
    for i in (4, 5, 6, 7, 16, 17):
        out.append(bytes([i, 0]))
        out.append(bytes([i, 2]) + b"n%2F1\n{}")
    out.append(bytes([29, 0]) + b"?node=n1&job=1&attempt=1&rank=0&offset=0"
               b"&stream=out\nhello\n")
    for i, q in API_QUERIES:
        out.append(bytes([i, 0]) + q)
    out.append(bytes([len(API_POST_BODIES) + 200, 0]) +
               b"GET /v1/jobs?limit=2 HTTP/1.1\r\n\r\n"
               b"GET /v1/nodes HTTP/1.1\r\nConnection: close\r\n\r\n")
    return out


def file_seeds():
    """(harness, bytes) written out here: the files of an attempt
    directory in the formats their writers use, witness messages."""
    spec = {"version": 1, "job": 7, "attempt": 1, "kill_grace_ms": 10000,
            "ranks": [{"rank": 0, "local_rank": 0, "argv": ["sh", "-c", "x"],
                       "env": ["A=1", "PATH=/bin"], "cwd": "/tmp",
                       "uid": 1000, "gid": 1000, "groups": [1000, 27],
                       "stdout": "/l/out.0", "stderr": "/l/err.0"}]}
    status = {"version": 1, "job": 7, "attempt": 1, "pid": 42,
              "fenced": False, "stopping": False, "done": False,
              "ranks": [{"rank": 0, "pid": 43, "proc_start": 12345,
                         "state": "running", "exit_code": -1, "signal": 0,
                         "start_ms": 1700000000000, "end_ms": 0,
                         "fenced": False},
                        {"rank": 1, "pid": 0, "state": "exited",
                         "exit_code": 127, "signal": 0,
                         "launch_error": "no such file"}]}
    ctl = bytearray(4096)
    ctl[0:8] = b"LSCTL001"
    ctl[8:12] = (1).to_bytes(4, "little")
    ctl[12:16] = (32).to_bytes(4, "little")
    ctl[16:24] = (1).to_bytes(8, "little")
    ctl[24:32] = (2).to_bytes(8, "little")
    slot = 64
    ctl[slot:slot + 8] = (1).to_bytes(8, "little")
    ctl[slot + 8:slot + 12] = (2).to_bytes(4, "little")
    ctl[slot + 16:slot + 24] = (100).to_bytes(8, "little")
    ctl[slot + 24:slot + 32] = (1).to_bytes(8, "little")
    out = [
        ("attempt_files", b"\x00" + json.dumps(spec).encode()),
        ("attempt_files", b"\x01" + json.dumps(status).encode()),
        ("attempt_files", b"\x02" + b"123456789\n"),
        ("attempt_files", b"\x03" + bytes(ctl)),
        ("attempt_files", b"\x03" + bytes(ctl) +
         (5).to_bytes(8, "little") + (40).to_bytes(8, "little")),
        ("attempt_files", b"\x04lockstep-ckpt-base 1\n"
         b"10 2049 131 1700000000 5 1700000000 7\n"
         b"20 2049 133 1700000100 5 1700000100 7\n"),
        ("attempt_files", b"\x05step-10"),
        ("attempt_files", b"\x05step-0"),
        ("attempt_files", b"\x05step-0012"),
        ("progress", b'{"step": 41, "attempt": 1, "time_ms": 1700000000000,'
         b' "pid": 9, "acks": [[1, 40, 3], [2, -1, 0]],'
         b' "step_p50_us": 2000, "step_p99_us": 4000,'
         b' "sections": {"compute": {"p50_us": 50, "p99_us": 70, "n": 200}}}'
         b'\n\xff\xff\n10 1\n20 1\n15 2\n'),
        ("rank_output", b"\x10Traceback (most recent call last):\n"
         b'  File "train.py", line 12, in <module>\n'
         b"    import torch_nonexistent\n"
         b"ModuleNotFoundError: No module named 't\xc3\xb6rch' \xe2\x9c\x93"
         b"\n\xff\xfe bad \xed\xa0\x80 surrogate \xf4\x90\x80\x80 big"
         b"\x00 nul\nassertion failed at step 5\n"),
        ("witness", b"LSW1 Q n1 00000000deadbeef"),
        ("witness", b"LSW1 A n2 00000000deadbeef 1500"),
        ("witness", b"LSW1 A n2 00000000deadbeef -1"),
        ("fence", b"LSF1 node2 41 3 " + b"0" * 64),
        ("fence", b"LSF1 gpu-017.rack-a 123456789012 0 " + b"a" * 64),
        ("leaseping", b"LSP1 n1 18446744073709551615 run " + b"0" * 64),
        ("leaseping", b"LSP1 gpu-017.rack-a 7 stop"),
        ("leaseping", b"LSA1 n1 42 1500 300"),
        ("leaseping", b"LSA1 n1 42 5000 1000 " + b"f" * 64),
    ]
    return out


def dictionary():
    """Every field name of a keys[] table in the parsers, as JSON keys."""
    names = set()
    for path in (glob.glob(os.path.join(ROOT, "common", "*.c")) +
                 glob.glob(os.path.join(ROOT, "scheduler", "api*.c")) +
                 glob.glob(os.path.join(ROOT, "agent", "*.c")) +
                 glob.glob(os.path.join(ROOT, "cli", "*.c"))):
        text = open(path, errors="replace").read()
        for block in re.findall(r"keys\[\] = \{(.*?)\}", text, re.S):
            names.update(re.findall(r'"([A-Za-z0-9_]+)"', block))
        for key in re.findall(r'jsonx_get_\w+\(\w+, "([A-Za-z0-9_]+)"', text):
            names.add(key)
        for key in re.findall(r'cli_j\w+\(\w+, "([A-Za-z0-9_]+)"', text):
            names.add(key)
    lines = ["# json.dict - written by fuzz/seeds.py: JSON syntax",
             "# and every field name the parsers know"]
    for tok in ['{', '}', '[', ']', ':', ',', '"', 'true', 'false', 'null',
                '-1', '0', '1e308', '9007199254740993', '"\\u0000"']:
        lines.append('"%s"' % tok.replace("\\", "\\\\").replace('"', '\\"'))
    for n in sorted(names):
        lines.append('"\\"%s\\":"' % n)
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.stderr.write("usage: fuzz/seeds.py OUT_DIR\n")
        return 2
    out = sys.argv[1]
    want = {}

    def add(harness, data):
        name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
        want.setdefault(harness, {})[name] = data

    for text, v in json_texts():
        for harness, prefix in classify(v):
            data = text.encode()
            if harness == "cli_reply":
                # the reply to the commands that read its shape, as a
                # 200 (an error body as a 400)
                status = 4 if "error" in keys_of(v) else 0
                for cmd in cli_cmds(v):
                    add(harness, bytes([cmd, status]) + data)
            else:
                add(harness, prefix + data)
    for data in http_seeds():
        add("http_request", data)
    for data in api_seeds(json_texts()):
        add("api_request", data)
    for harness, data in text_seeds() + file_seeds():
        add(harness, data)

    shutil.rmtree(out, ignore_errors=True)
    for harness, files in sorted(want.items()):
        d = os.path.join(out, harness)
        os.makedirs(d)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    with open(os.path.join(out, "json.dict"), "w") as f:
        f.write(dictionary())
    print("# seeds: %s" % ", ".join("%s %d" % (h, len(f))
                                     for h, f in sorted(want.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
