#!/bin/bash
# t1006: errors point at the fix. A scheduler that cannot be reached is
# named with where its address came from and how to point the CLI
# elsewhere (LOCKSTEP_SERVER, --server, `. DIR/env`); a server on that
# address that is not lockstep (a web server, something that does not
# speak HTTP) is recognised as such; cancelling a job that has ended says
# it had already ended.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1

# A TCP port on 127.0.0.1 that nothing listens on (bound, then closed).
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_fails CMD...: CMD exits 1 (3 for a scheduler that cannot be
# reached: $WANT_RC); its stderr is kept in ./err.
run_fails() {
    local rc
    "$@" 2>err
    rc=$?
    cat err
    test $rc = "${WANT_RC:-1}"
}

# has TEXT...: ./err has each TEXT (a fixed string).
has() {
    local t
    for t in "$@"; do
        grep -qF -- "$t" err || { echo "missing: $t" >&2; return 1; }
    done
}

test_expect_success 'a socket that is not there: where, and how to point elsewhere' '
    WANT_RC=3 run_fails env LOCKSTEP_SERVER=$TEST_DIR/no.sock "$CLI" jobs &&
    has "lockstep jobs: scheduler unreachable at $TEST_DIR/no.sock (from LOCKSTEP_SERVER): no such file or directory; running jobs are not affected" \
        "lockstep jobs: point the CLI at the scheduler with LOCKSTEP_SERVER=URL|SOCKET or --server; for a local cluster, run '"'"'. DIR/env'"'"' (DIR as given to deploy/local-cluster.sh up)"
'

test_expect_success 'a port nothing listens on (a scheduler that is down): one line, exit 3' '
    port=$(free_port) &&
    WANT_RC=3 run_fails ls_cli --server http://127.0.0.1:$port jobs &&
    has "lockstep jobs: scheduler unreachable at http://127.0.0.1:$port (from --server): connection refused; running jobs are not affected" &&
    test "$(wc -l <err)" = 1
'

test_expect_success 'a host name that does not resolve' '
    WANT_RC=3 run_fails ls_cli --server http://no-such-host.invalid:9 jobs &&
    has "scheduler unreachable at http://no-such-host.invalid:9 (from --server)" \
        "LOCKSTEP_SERVER"
'

test_expect_success 'the default socket, when nothing says where to look' '
    if test -e /run/lockstep/lockstepd.sock; then
        echo "# a scheduler runs on this machine: skipped"; return 0
    fi
    WANT_RC=3 run_fails env -u LOCKSTEP_SERVER "$CLI" jobs &&
    has "scheduler unreachable at /run/lockstep/lockstepd.sock (the default; none was given)" \
        ". DIR/env"
'

# A web server that is not lockstep: python's http.server, serving a
# directory where /v1/jobs is an HTML page.
test_expect_success 'a web server on that address is not taken for lockstep' '
    mkdir -p www/v1 && echo "<html>a web page</html>" >www/v1/jobs &&
    (cd www && exec "$PY" -u -m http.server --bind 127.0.0.1 0 >../www.log 2>&1) &
    EXTRA_PIDS+=($!) &&
    wait_for 20 "grep -q \"port [0-9]\" www.log" &&
    port=$(sed -n "s/.* port \([0-9]*\) .*/\1/p" www.log | head -n 1) &&
    url=http://127.0.0.1:$port && echo $url >www.url &&
    run_fails ls_cli --server $url jobs &&
    has "the server at $url is not a lockstep scheduler: it answered HTTP 200, not JSON (\"<html>a web page</html>\")" \
        "LOCKSTEP_SERVER"
'

test_expect_success 'its 404 and 501 pages are not taken for lockstep errors' '
    url=$(cat www.url) &&
    run_fails ls_cli --server $url show 5 &&
    has "the server at $url is not a lockstep scheduler: it answered HTTP 404" &&
    run_fails ls_cli --server $url submit -- true &&
    has "the server at $url is not a lockstep scheduler: it answered HTTP 501"
'

# Something that does not speak HTTP at all (an SSH server, say).
test_expect_success 'a server that does not speak HTTP is not taken for lockstep' '
    "$PY" -u -c "
import socket
s = socket.socket()
s.bind((\"127.0.0.1\", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(b\"SSH-2.0-OpenSSH_9.2\\r\\n\")
    c.shutdown(socket.SHUT_WR)
    c.close()
" >ssh.port 2>&1 &
    EXTRA_PIDS+=($!) &&
    wait_for 20 "test -s ssh.port" && port=$(cat ssh.port) &&
    run_fails ls_cli --server http://127.0.0.1:$port jobs &&
    has "the server at http://127.0.0.1:$port (from --server) is not a lockstep scheduler: it does not answer HTTP"
'

test_expect_success 'cancel of a job that has ended says it had already ended' '
    id=$(submit_id -- true) && wait_job_state $id SUCCEEDED 30 &&
    ls_cli cancel $id >out 2>err; rc=$?; cat out err; test $rc = 0 &&
    test "$(cat out)" = "job $id already ended: SUCCEEDED" &&
    test "$(job_state $id)" = SUCCEEDED
'

test_done
