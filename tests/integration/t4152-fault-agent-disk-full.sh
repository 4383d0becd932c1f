#!/bin/bash
# t4152: the agent's log directory fills up. Its log_dir is a small tmpfs
# (in the test's own mount namespace) filled to the last block while a
# rank writes about 10 KB/s of numbered lines: the rank keeps running
# (its writes fail; nothing of lockstep blocks or kills it), the job's
# logs say output was lost and when (a line when the disk filled, one
# when it had room again), shipping goes on afterwards, and the job
# succeeds with its last line in `lockstep logs`.
HARNESS_MOUNT_NS=1
. "$(dirname "$0")/../lib/harness.sh"

LOGS=$TEST_DIR/agent-n1/logs
ISO='[0-9-]*T[0-9:]*Z'

# The agent's disk check watches log_dir by default, and a full one is a
# hard finding that excludes the node (and moves its jobs); here the check
# watches the test directory only, so what is seen is the log path's own
# handling of a full disk.
test_expect_success 'an agent whose log_dir is a 1 MiB tmpfs; a rank writing' '
    mount_tmpfs "$LOGS" 1m &&
    start_scheduler && start_agent n1 -o health_mounts="$TEST_DIR" &&
    wait_nodes_up 1 &&
    id=$(submit_id -- sh -c "i=0; while [ ! -e $TEST_DIR/stop ]; do printf \"line %d %0190d\\n\" \$i 0; i=\$((i + 1)); sleep 0.02; done; echo last line") &&
    echo $id >job && wait_job_state $id RUNNING &&
    wait_for 10 "ls_cli logs $id | grep -q \"^line 20 \""
'

test_expect_success 'the disk fills: the agent says so; the rank runs on' '
    fill_disk "$LOGS" && df -k "$LOGS" &&
    wait_for 10 "grep -q \"log_dir .$LOGS. is full: the ranks. output is being lost\" $TEST_DIR/agent-n1/log" &&
    pid=$(job_pids $(cat job)) && test -n "$pid" && sleep 3 &&
    test "$(job_pids $(cat job))" = "$pid" && job_state_is $(cat job) RUNNING
'

test_expect_success 'space returns: the agent says so, the output ships again' '
    before=$(ls_cli logs $(cat job) | grep -c "^line ") &&
    free_disk "$LOGS" &&
    wait_for 10 "grep -q \"log_dir .$LOGS. has room again\" $TEST_DIR/agent-n1/log" &&
    wait_for 10 "test \$(ls_cli logs $(cat job) | grep -c \"^line \") -gt $((before + 20))"
'

test_expect_success 'the job succeeds; its logs say what was lost, and when' '
    touch "$TEST_DIR/stop" && wait_job_state $(cat job) SUCCEEDED 30 &&
    wait_for 10 "ls_cli logs $(cat job) | grep -qx \"last line\"" &&
    ls_cli logs $(cat job) >out.txt &&
    grep "^\[lockstep" out.txt &&
    grep -q "^\[lockstep: output written from $ISO to $ISO may be lost: the disk of the job.s output (log_dir .$LOGS.) was full\]$" out.txt &&
    end=$(grep -n "^\[lockstep: output written from" out.txt | cut -d: -f1) &&
    t1=$(sed -n "${end}s/.*written from \($ISO\) to.*/\1/p" out.txt) &&
    t2=$(sed -n "${end}s/.* to \($ISO\) may be.*/\1/p" out.txt) &&
    test "$t1" \< "$t2" -o "$t1" = "$t2"
'

# Where the numbered lines of out.txt jump: "AT N M", line AT of the file
# being "line N" after "line M" with M != N - 1. The lost run must end
# before the line that says so (the rank's next line may come just after
# it or just before it: the agent looks at the disk every 200 ms).
jumps() {
    awk '/^line / { n = $2 + 0; if (seen && n != prev + 1) print NR, n, prev;
        prev = n; seen = 1 }' out.txt
}

test_expect_success 'one run of lines was lost, between the two lines' '
    jumps | tee jumps.txt && test "$(wc -l <jumps.txt)" = 1 &&
    at=$(cut -d" " -f1 jumps.txt) &&
    end=$(grep -n "^\[lockstep: output written from" out.txt | cut -d: -f1) &&
    test "$at" -le $((end + 1)) &&
    begin=$(grep -n "^\[lockstep: $ISO: the disk of the job.s output (log_dir .$LOGS.) is full: output from here on may be lost\]$" out.txt | cut -d: -f1) &&
    { test -z "$begin" || test "$begin" -lt "$at"; }
'

test_expect_success 'the stored copy is the agent file, byte for byte' '
    cmp out.txt "$LOGS/$(cat job)/1/rank-0.out"
'

test_done
