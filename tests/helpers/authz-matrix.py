#!/usr/bin/python3
"""authz-matrix.py - the authorization and visibility matrix (docs/api.md
"Visibility and permissions"; issue 11, "What must be true" 1), as TAP.

The matrix is data: tests/fixtures/authz-matrix.json has one row per
route of the scheduler's route table (`lockstepd --dump-routes`), with
the request to send and, for every principal, the status it must get and
what its reply must and must not show. This script checks that the rows
and the route table name the same routes with the same access class
(a route added without a row fails), that each row's section of
docs/api.md has a `Visibility:` line, and then sends every row's request
as every principal to a running scheduler.

Principals:
  none              TCP, no Authorization header
  user              alice's token (alice owns the row's objects)
  other_user        bob's token
  operator          carol's token (role operator)
  expired           an expired token of alice's
  revoked           a revoked token of alice's
  agent             the agent of the row's node (its node key, signed)
  agent_other_node  the agent of another node (n2's key) naming the
                    row's node
  replayed_agent    the agent's request sent a second time, byte for byte

Placeholders in a row's path and body: {job_run} (alice's running job,
on n1), {job_failed} (alice's failed job), {agent_node} (the row's node),
{job_pending}, {job_held}, {token_alice}, {node_fresh} (a new one for
each principal: a pending or held job of alice's, a token of alice's, a
registered node).

Usage: authz-matrix.py URL FIXTURE ROUTES API_MD SECRET TOKENS_JSON
       [--record]      print the statuses seen instead of checking them
       [--table-only]  check the rows against the table and the docs only
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentcred  # noqa: E402

PRINCIPALS = ["none", "user", "other_user", "operator", "expired", "revoked",
              "agent", "agent_other_node", "replayed_agent"]

results = []


def ok(cond, name, diag=()):
    results.append((bool(cond), name, list(diag)))
    return bool(cond)


def send(url, method, path, auth=None, body=None):
    headers = {}
    if auth:
        headers["Authorization"] = auth
    data = body.encode() if body is not None else None
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


class Cluster:
    """The objects the rows name, made through the API."""

    def __init__(self, url, secret, tokens):
        self.url = url
        self.secret = secret
        self.tok = tokens
        self.fresh_nodes = 0

    def bearer(self, who):
        return "Bearer " + self.tok[who]

    def api(self, who, method, path, body=None):
        return send(self.url, method, path, self.bearer(who),
                    json.dumps(body) if body is not None else None)

    def submit(self, spec):
        spec = dict({"version": 1}, **spec)
        st, text = self.api("alice", "POST", "/v1/jobs", spec)
        assert st == 201, (st, text)
        return json.loads(text)["id"]

    def state(self, job):
        return json.loads(self.api("carol", "GET", "/v1/jobs/%d" % job)[1])[
            "state"]

    def wait_state(self, job, states, limit=60):
        deadline = time.time() + limit
        while time.time() < deadline:
            if self.state(job) in states:
                return True
            time.sleep(0.2)
        return False

    def pending_job(self):
        # n1's four GPUs are held by job_run: this one waits.
        return self.submit({"argv": ["sleep", "600"], "gpus_per_node": 1})

    def held_job(self):
        job = self.pending_job()
        st, text = self.api("carol", "POST", "/v1/jobs/%d/hold" % job)
        assert st == 200, (st, text)
        return job

    def alice_token(self):
        st, text = self.api("carol", "POST", "/v1/tokens",
                            {"version": 1, "user": "alice", "role": "user"})
        assert st == 201, (st, text)
        return json.loads(text)["id"]

    def register(self, node):
        body = json.dumps({"version": 1, "node": node, "register": True,
                           "agent_id": "matrix-" + node, "addr": "127.0.0.1",
                           "cpus": 1, "memory_mb": 64, "gpus": [],
                           "labels": {}, "jobs": []})
        key = agentcred.node_key(self.secret, node)
        [(st, text)] = agentcred.request(self.url, "POST", "/v1/agent/status",
                                         key, node, body)
        assert st == 200, (st, text)
        return node

    def fresh_node(self):
        self.fresh_nodes += 1
        return self.register("mx%d" % self.fresh_nodes)


def check_table(fixture, routes, api_md):
    """The rows against the route table and the documentation."""
    rows = {r["route"]: r for r in fixture["routes"]}
    table = {}
    for line in routes.splitlines():
        method, path, access = line.split()
        table[method + " " + path] = access
    missing = sorted(set(table) - set(rows))
    extra = sorted(set(rows) - set(table))
    ok(not missing, "every route has a row in the matrix",
       ["no row for %s" % m for m in missing])
    ok(not extra, "every row of the matrix is a route",
       ["no route %s" % m for m in extra])
    wrong = ["%s: table %s, matrix %s" % (k, table[k], rows[k]["access"])
             for k in sorted(set(table) & set(rows))
             if table[k] != rows[k]["access"]]
    ok(not wrong, "each row has its route's access class", wrong)
    lines = api_md.split("\n")
    undocumented = []
    for r in fixture["routes"]:
        try:
            i = lines.index(r["doc"])
        except ValueError:
            undocumented.append("%s: no section '%s'" % (r["route"], r["doc"]))
            continue
        if not lines[i + 1].startswith("Visibility:"):
            undocumented.append("%s: '%s' has no Visibility: line" %
                                (r["route"], r["doc"]))
    ok(not undocumented, "each route's section of docs/api.md says its "
       "visibility", undocumented)
    incomplete = ["%s: no status for %s" % (r["route"], p)
                  for r in fixture["routes"] for p in PRINCIPALS
                  if p not in r["expect"] and "*" not in r["expect"]]
    ok(not incomplete, "every row gives every principal a status",
       incomplete)


def fill(text, values, fresh):
    """Placeholders replaced; a quoted one of a number ("{job_run}" in a
    body) becomes the number."""
    for k, v in values.items():
        if isinstance(v, int):
            text = text.replace('"{%s}"' % k, str(v))
        text = text.replace("{%s}" % k, str(v))
    for k, make in fresh.items():
        if "{%s}" % k in text:
            v = make()
            text = text.replace('"{%s}"' % k, str(v)) if isinstance(
                v, int) else text
            text = text.replace("{%s}" % k, str(v))
    return text


def auth_for(c, principal, row, method, path, body):
    node = row.get("agent_node", "nf")
    data = body.encode() if body is not None else b""
    if principal in ("none",):
        return None
    if principal in ("user", "other_user", "operator", "expired", "revoked"):
        who = {"user": "alice", "other_user": "bob", "operator": "carol",
               "expired": "alice_expired", "revoked": "alice_revoked"}
        return c.bearer(who[principal])
    if principal == "agent_other_node":
        node = "n2"
    return agentcred.sign(agentcred.node_key(c.secret, node), node, method,
                          path, data)


def run_cell(c, row, principal, values, fresh):
    method = row["route"].split()[0]
    path = fill(row["path"], values, fresh)
    body = row.get("body")
    body = fill(json.dumps(body), values, fresh) if body is not None else None
    if row.get("raw_body") is not None:
        body = row["raw_body"]
    auth = auth_for(c, principal, row, method, path, body)
    st, text = send(c.url, method, path, auth, body)
    if principal == "replayed_agent":
        st, text = send(c.url, method, path, auth, body)
    return path, st, text


def run_matrix(c, fixture, record):
    values = {"job_run": c.job_run, "job_failed": c.job_failed}
    fresh = {"job_pending": c.pending_job, "job_held": c.held_job,
             "token_alice": c.alice_token, "node_fresh": c.fresh_node}
    seen = {}
    for row in fixture["routes"]:
        values["agent_node"] = row.get("agent_node", "nf")
        for p in PRINCIPALS:
            want = row["expect"].get(p, row["expect"].get("*"))
            path, st, text = run_cell(c, row, p, values, fresh)
            seen.setdefault(row["route"], {})[p] = st
            if record:
                continue
            diag = ["%s %s -> %d %s" % (row["route"].split()[0], path, st,
                                        text[:300])]
            ok(st == want, "%s as %s: %d" % (row["route"], p, want), diag)
            sees, hides = row.get("sees", {}), row.get("hides", {})
            for s in sees.get(p, sees.get("*", [])):
                s = fill(s, values, {})
                ok(s in text, "%s as %s shows %s" % (row["route"], p, s),
                   diag)
            for s in hides.get(p, hides.get("*", [])):
                s = fill(s, values, {})
                ok(s not in text, "%s as %s does not show %s" %
                   (row["route"], p, s), diag)
    if record:
        for route, cells in seen.items():
            print(route, json.dumps(cells))


def node_state(c, node):
    return json.loads(c.api("carol", "GET", "/v1/nodes/" + node)[1])["state"]


def setup(c):
    """alice's failed job: killed by SIGBUS, which blames n1 at once and,
    with blame_threshold 1, excludes it (its stderr in n1's node_blamed
    and node_excluded events), after which an operator lets n1 back in;
    then alice's running job on all of n1's GPUs; node nf registered."""
    c.job_failed = c.submit({
        "argv": ["sh", "-c", "echo ALICE-ERR-MARK >&2; kill -BUS $$"],
        "max_restarts": 0, "max_infra_restarts": 0, "gpus_per_node": 4})
    assert c.wait_state(c.job_failed, ["FAILED"]), "job_failed did not fail"
    deadline = time.time() + 30
    while node_state(c, "n1") == "UP" and time.time() < deadline:
        time.sleep(0.2)
    st, text = c.api("carol", "POST", "/v1/nodes/n1/uncordon",
                     {"version": 1, "reason": "matrix"})
    assert st == 200, (st, text)
    while node_state(c, "n1") != "UP" and time.time() < deadline:
        time.sleep(0.2)
    c.job_run = c.submit({
        "argv": ["sh", "-c", "echo ALICE-OUT-MARK; exec sleep 600"],
        "gpus_per_node": 4, "env": {"ALICE_MARK": "ALICE-ENV-MARK"}})
    assert c.wait_state(c.job_run, ["RUNNING"]), "job_run is not running"
    c.register("nf")


def main():
    url, fixture_path, routes_path, md_path, secret_path, tokens_path = \
        sys.argv[1:7]
    record = "--record" in sys.argv[7:]
    table_only = "--table-only" in sys.argv[7:]
    with open(fixture_path) as f:
        fixture = json.load(f)
    with open(routes_path) as f:
        routes = f.read()
    with open(md_path) as f:
        api_md = f.read()
    with open(tokens_path) as f:
        tokens = json.load(f)
    check_table(fixture, routes, api_md)
    if not table_only:
        c = Cluster(url.rstrip("/"), agentcred.read_secret(secret_path),
                    tokens)
        setup(c)
        run_matrix(c, fixture, record)
    print("1..%d" % len(results))
    for i, (cond, name, diag) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if cond else "not ok", i, name))
        if not cond:
            for d in diag:
                print("#   " + d.replace("\n", " "))
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
