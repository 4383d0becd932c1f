#!/usr/bin/python3
"""watch-attempts.py - record which attempts of a job have live processes.

    watch-attempts.py --tag TAG --job ID --out FILE

Every 20 ms, scans /proc for processes whose environment carries
LOCKSTEP_TEST_TAG=TAG and LOCKSTEP_JOB_ID=ID, and appends a line
"<time_ms> <attempt>:<node> ..." to FILE whenever the set changes. A test
then checks that no line names two attempts: exactly one attempt ran at
any time. Runs until killed.
"""
import argparse
import os
import time


def scan(tag, job):
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        if b"LOCKSTEP_TEST_TAG=" + tag not in env:
            continue
        if b"LOCKSTEP_JOB_ID=" + job not in env:
            continue
        attempt = node = b"?"
        for kv in env:
            if kv.startswith(b"LOCKSTEP_ATTEMPT="):
                attempt = kv.split(b"=", 1)[1]
            elif kv.startswith(b"LOCKSTEP_NODE="):
                node = kv.split(b"=", 1)[1]
        found.add("%s:%s" % (attempt.decode(), node.decode()))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tag, job = a.tag.encode(), a.job.encode()
    last = None
    with open(a.out, "a") as out:
        while True:
            now = scan(tag, job)
            if now != last:
                out.write("%d %s\n" % (time.time() * 1000,
                                       " ".join(sorted(now))))
                out.flush()
                last = now
            time.sleep(0.02)


if __name__ == "__main__":
    main()
