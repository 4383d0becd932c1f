#!/bin/bash
# t4153: the scheduler runs out of descriptors. Its descriptor limit is
# lowered under it (prlimit) to 128, below its connection cap, and 200
# connections that send nothing are opened from 127.0.0.2: accept fails
# with EMFILE, and libuv's reserved descriptor lets it accept and close
# each new connection at once (shed) instead of spinning on the listener.
# Meanwhile the two agents keep reporting over their open connections
# (their last reports keep being saved; no node LOST) and the scheduler
# does not burn a core. When the connections close it serves new ones
# again, and its descriptors return to their baseline.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler -o http_header_timeout_ms=60000 -o http_idle_timeout_ms=60000
export AGENT_SERVER=$LOCKSTEP_URL
start_agent n1
start_agent n2
PORT=$(cat "$TEST_DIR/sched/port")

nfds() { ls /proc/"$SCHED_PID"/fd | wc -l; }

cpu_ticks() { # utime + stime of the scheduler, in clock ticks
    awk '{ print $14 + $15 }' /proc/"$SCHED_PID"/stat
}

# probe N: N new connections one after the other, each asking for
# /metrics; prints how many were answered, shed (closed with no answer)
# and left hanging (nothing within 3 s).
probe() {
    "$PY" - "$PORT" "$1" <<'PYEOF'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
out = {"answered": 0, "shed": 0, "hanging": 0}
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = s.recv(16)
        out["answered" if data.startswith(b"HTTP/1.1 ") else "shed"] += 1
    except socket.timeout:
        out["hanging"] += 1
    except OSError:
        out["shed"] += 1
    s.close()
print("answered=%(answered)d shed=%(shed)d hanging=%(hanging)d" % out)
PYEOF
}

last_seen() {
    db_query "SELECT min(last_seen_ms) FROM nodes"
}

test_expect_success 'two agents over TCP are UP; the descriptors at rest' '
    wait_nodes_up 2 && sleep 1 && nfds >base.txt && cat base.txt &&
    test "$(probe 3)" = "answered=3 shed=0 hanging=0"
'

# hold N: N connections from 127.0.0.2 that send nothing, in the
# background (its PID in hold.pid).
hold() {
    "$PY" "$SRC_DIR/tests/helpers/slowloris.py" 127.0.0.1 "$PORT" "$1" 60 \
        "$TEST_DIR/hold.json" --source 127.0.0.2 --hold &
    EXTRA_PIDS+=($!)
    echo $! >"$TEST_DIR/hold.pid"
}

test_expect_success 'the limit goes down to 128; 200 connections come' '
    prlimit --pid "$SCHED_PID" --nofile=128:128 && hold 200 &&
    wait_for 20 "test -s hold.json && test \$(jget \"j[\\\"closed_by_server\\\"]\" <hold.json) -ge 60" &&
    cat hold.json && echo && nfds
'

test_expect_success 'new connections are shed at once, none left hanging' '
    out=$(probe 20) && echo "$out" &&
    test "$out" = "answered=0 shed=20 hanging=0"
'

test_expect_success 'no core burnt while out of descriptors' '
    t0=$(cpu_ticks) && sleep 3 && t1=$(cpu_ticks) &&
    hz=$(getconf CLK_TCK) && echo "$((t1 - t0)) ticks in 3 s at $hz/s" &&
    test $((t1 - t0)) -lt $((hz * 3 / 2))
'

test_expect_success 'the agents keep reporting (their reports are saved)' '
    s0=$(last_seen) && wait_for 15 "test \$(last_seen) -gt $s0" &&
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''node_lost'\''")" = 0
'

test_expect_success 'the connections close: new ones are served again' '
    kill "$(cat hold.pid)" && wait "$(cat hold.pid)";
    wait_for 20 "test \"\$(probe 1)\" = \"answered=1 shed=0 hanging=0\"" &&
    test "$(probe 5)" = "answered=5 shed=0 hanging=0" &&
    nodes_up_is 2
'

test_expect_success 'the descriptors return to their baseline' '
    wait_for 20 "test \$(nfds) -le \$((\$(cat base.txt) + 2))" ||
        { nfds; ls -l /proc/$SCHED_PID/fd; false; }
'

test_expect_success 'no node was ever LOST' '
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''node_lost'\''")" = 0
'

test_done
