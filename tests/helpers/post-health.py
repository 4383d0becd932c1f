#!/usr/bin/python3
"""post-health.py - send a node report with `health`, as an agent with
health checks does (POST /v1/agent/status, docs/api.md), so that tests
drive the scheduler's node-health policy before the agent's own checks
exist on this branch.

Usage: post-health.py URL SECRET_FILE NODE AGENT_ID [options]
       [CHECK:STATUS:CODE[:SCOPE]]...

  --boot ID        the boot id (default boot-1)
  --no-full-pass   full_pass false (default true)
  --run N          the run counter of every result (default 1)
  --cpus N --memory-mb N --gpus 0,1,2,3 --label k=v --addr A
                   the resources reported (defaults: the harness's agents)

Authenticates as the node's agent: a request signed with the node's
key, derived from SECRET_FILE (agentcred.py, docs/api.md "Agent
credentials"). Prints the HTTP status; exits 0 on 2xx.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentcred  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("secret_file")
    p.add_argument("node")
    p.add_argument("agent_id")
    p.add_argument("results", nargs="*")
    p.add_argument("--boot", default="boot-1")
    p.add_argument("--no-full-pass", action="store_true")
    p.add_argument("--run", type=int, default=1)
    p.add_argument("--cpus", type=int, default=8)
    p.add_argument("--memory-mb", type=int, default=16384)
    p.add_argument("--gpus", default="0,1,2,3")
    p.add_argument("--label", default=None)
    p.add_argument("--addr", default="127.0.0.1")
    a = p.parse_intermixed_args()
    key = agentcred.node_key(agentcred.read_secret(a.secret_file), a.node)
    results = []
    for spec in a.results:
        parts = spec.split(":", 3)
        r = {"check": parts[0], "status": parts[1], "code": parts[2],
             "scope": parts[3] if len(parts) > 3 else "node",
             "evidence": "injected by %s" % spec, "run": a.run,
             "duration_ms": 5, "at_ms": 0, "count": 1}
        results.append(r)
    label = a.label or "rack=r-%s" % a.node
    k, v = label.split("=", 1)
    body = {"version": 1, "node": a.node, "agent_id": a.agent_id,
            "addr": a.addr, "cpus": a.cpus, "memory_mb": a.memory_mb,
            "gpus": [int(g) for g in a.gpus.split(",") if g != ""],
            "labels": {k: v}, "jobs": [],
            "health": {"boot_id": a.boot,
                       "full_pass": not a.no_full_pass,
                       "results": results}}
    [(status, text)] = agentcred.request(a.url, "POST", "/v1/agent/status",
                                         key, a.node, json.dumps(body))
    if 200 <= status < 300:
        print(status)
        return 0
    print(status, text)
    return 1


if __name__ == "__main__":
    sys.exit(main())
