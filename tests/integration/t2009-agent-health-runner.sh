#!/bin/bash
# t2009: the agent's health check runner (docs/config.md "Health checks").
# n1 runs 9 checks: a site check that ignores SIGTERM and sleeps (TIMEOUT
# within its deadline plus grace, nothing of it left), 4 other site checks
# (PASS, WARN, a non-zero exit, bad output: never PASS) and the built-ins
# disk (on this test's real tmp mount), memory, nic and pcie (on the
# fixture sysfs tree: one NIC down, one GPU link degraded). Its heartbeats
# go on meanwhile (a runner that waited for it would stop them for 7 s). n2's site checks leave a grandchild holding stdout: their
# results come anyway. Asserted through the scheduler's view of each node
# (`checks`: each check's latest run, as its agent reported it).
. "$(dirname "$0")/../lib/harness.sh"

CHECK=$BUILD_DIR/agent/lockstep-check
SYSFS=$SRC_DIR/tests/fixtures/sysfs
SITE1=$TEST_DIR/site1
SITE2=$TEST_DIR/site2
mkdir -p "$SITE1" "$SITE2"

site() { # site DIR NAME BODY: an executable site check
    printf '#!/bin/sh\n%s\n' "$3" >"$1/$2" && chmod +x "$1/$2"
}
site "$SITE1" sleeper "# lockstep: interval=60s timeout=6s
echo \$\$ >>$TEST_DIR/sleeper.pids
trap '' TERM
sleep 300"
site "$SITE1" pass 'echo "{\"status\":\"PASS\",\"code\":\"site.ok\"}"'
site "$SITE1" warn '# lockstep: interval=500ms
echo "{\"status\":\"WARN\",\"code\":\"site.fan_slow\",\"scope\":\"node\",\"numbers\":{\"rpm\":900}}"'
site "$SITE1" exit3 'echo "{\"status\":\"PASS\",\"code\":\"site.ok\"}"; echo broken >&2; exit 3'
site "$SITE1" garbage 'echo "all good, trust me"'
printf 'not a check: not executable\n' >"$SITE1/README"

# The disk check's thresholds around what this mount really uses, so the
# verdict does not depend on the machine: PASS here.
used=$("$CHECK" disk --mount "$TEST_DIR" | jget 'j[0]["numbers"]["used_pct"]')
warn_at=$("$PY" -c "print(min(100, int($used) + 2))")

start_scheduler
start_agent n1 -o gpus=0-1 -o health_checks=disk,memory,nic,pcie \
    -o health_checks_dir="$SITE1" -o health_mounts="$TEST_DIR" \
    -o sysfs_root="$SYSFS" -o health_nics=eth0,eth1,mlx5_0/1 \
    -o health_interval_ms=1000 -o health_timeout_ms=5000 \
    -o health_kill_grace_ms=1000
site "$SITE2" grandchild '( sleep 317 ) &
echo "{\"status\":\"PASS\",\"code\":\"site.grandchild\"}"'
site "$SITE2" escapee 'setsid sleep 301 &
echo "{\"status\":\"PASS\",\"code\":\"site.escapee\"}"'
start_agent n2 -o health_checks= -o health_checks_dir="$SITE2" \
    -o health_interval_ms=1000

# result NODE CHECK FIELD: FIELD of CHECK's (first) result on NODE.
result() {
    ls_cli node "$1" --json |
        jget "[r for r in [dict(r, check=c[\"check\"]) for c in j.get(\"checks\", []) for r in c[\"results\"]] if r[\"check\"] == \"$2\"][0][\"$3\"]"
}
# codes NODE CHECK: "STATUS code scope" of each result of CHECK, sorted.
codes() {
    ls_cli node "$1" --json |
        jget "\" \".join(sorted(r[\"status\"] + \"/\" + r[\"code\"] + \"/\" + r[\"scope\"] for r in [dict(r, check=c[\"check\"]) for c in j.get(\"checks\", []) for r in c[\"results\"]] if r[\"check\"] == \"$2\"))"
}

# n1's checks find faults (a NIC down, a degraded link): it is excluded,
# which is not what this test is about; both nodes just have to report.
test_expect_success 'nodes report' '
    wait_for 20 "test \"\$(ls_cli nodes --json | jget \"len(j)\")\" = 2"
'

# Sampled from the sleeper's start until its TIMEOUT: the whole run.
test_expect_success 'heartbeats never pause while the sleeper runs' '
    wait_for 10 "test -s $TEST_DIR/sleeper.pids" &&
    for i in $(seq 1 200); do
        ls_cli node n1 --json >n.json || return 1
        date +%s%3N >>now &&
        jget "j[\"last_seen_ms\"]" <n.json >>seen &&
        jget "[r[\"status\"] for c in j.get(\"checks\", []) for r in c[\"results\"] if c[\"check\"] == \"site:sleeper\"]" <n.json >st
        grep -q TIMEOUT st && break
        sleep 0.2
    done &&
    grep -q TIMEOUT st && test $(wc -l <seen) -ge 5 &&
    paste now seen | awk "{ g = \$1 - \$2; if (g > m) m = g } END { print m }" >gap &&
    echo "samples $(wc -l <seen), largest gap $(cat gap) ms" &&
    test "$(cat gap)" -lt 3000
'

test_expect_success 'the sleeper is TIMEOUT within its deadline plus grace' '
    wait_for 20 "test \"\$(result n1 site:sleeper status)\" = TIMEOUT" &&
    test "$(result n1 site:sleeper code)" = check.timeout &&
    d=$(result n1 site:sleeper duration_ms) && echo "duration $d" &&
    test "$d" -ge 6000 && test "$d" -lt 9000
'

# group_left PGID: the processes of that group but zombies (SIGKILLed
# members whose new parent has not reaped them yet).
group_left() {
    awk -v g="$1" "{ sub(/.*\\) /, \"\"); split(\$0, f, \" \"); if (f[3] == g && f[1] != \"Z\") print FILENAME }" \
        /proc/[0-9]*/stat 2>/dev/null
    true
}

test_expect_success 'no process of the sleeper remains' '
    pid=$(head -n 1 $TEST_DIR/sleeper.pids) && echo "pgid $pid" &&
    wait_for 5 "test -z \"\$(group_left $pid)\"" ||
    { group_left $pid; false; }
'

test_expect_success 'the other 8 checks report their real results' '
    wait_for 15 "ls_cli node n1 --json | jget \"j[\\\"health\\\"][\\\"waiting\\\"]\" | grep -qx False" &&
    test "$(codes n1 site:pass)" = PASS/site.ok/node &&
    test "$(codes n1 site:warn)" = WARN/site.fan_slow/node &&
    test "$(result n1 site:warn numbers)" = "{\"rpm\": 900}" &&
    test "$(codes n1 site:exit3)" = UNKNOWN/check.failed/node &&
    result n1 site:exit3 evidence | grep -q "status 3: broken" &&
    test "$(codes n1 site:garbage)" = UNKNOWN/check.bad_output/node &&
    test "$(codes n1 disk)" = "PASS/disk.ok/mount:$TEST_DIR" &&
    test "$(codes n1 memory)" = PASS/memory.ok/node &&
    test "$(codes n1 nic)" = "FAIL/nic.down/nic:eth1 PASS/nic.up/nic:eth0 PASS/nic.up/nic:mlx5_0/1" &&
    test "$(codes n1 pcie)" = "FAIL/pcie.width_degraded/pci:0000:19:00.0 PASS/pcie.ok/pci:0000:18:00.0" &&
    test "$(ls_cli node n1 --json | jget "len(j[\"checks\"])")" = 9
'

test_expect_success 'checks run on their own intervals; the sleeper is not rerun yet' '
    r1=$(result n1 site:warn run) &&
    wait_for 10 "test \$(result n1 site:warn run) -ge $((r1 + 3))" &&
    test "$(wc -l <$TEST_DIR/sleeper.pids)" = 1
'

test_expect_success 'a grandchild holding stdout does not stall the result' '
    wait_for 10 "test \"\$(result n2 site:grandchild status)\" = PASS" &&
    wait_for 10 "test \"\$(result n2 site:escapee status)\" = PASS" &&
    test "$(result n2 site:grandchild duration_ms)" -lt 1000 &&
    test "$(result n2 site:escapee duration_ms)" -lt 1000 &&
    wait_for 10 "test \$(result n2 site:grandchild run) -ge 3"
'

# The escapee left its group (setsid): only the test's cleanup ends it.
# A run of the check every second starts a new grandchild, which lives
# until the run is reaped: a grandchild seen is gone within seconds.
sleeping() { # ARG: the tagged "sleep ARG" processes, "PID ARG" each
    for pid in $(tagged_pids); do
        echo "$pid $(tr "\0" " " </proc/$pid/cmdline 2>/dev/null)"
    done | sed -n "s/^\([0-9]*\) sleep $1 $/\1/p"
}
alive_of() { # PIDS: those of them that still run "sleep 317"
    for pid in "$@"; do
        tr "\0" " " </proc/$pid/cmdline 2>/dev/null | grep -qx "sleep 317 " &&
            echo $pid
    done
}
test_expect_success 'the grandchild in the group is killed with it' '
    test -n "$(sleeping 301)" &&
    seen=$(sleeping 317) && echo "grandchildren now: $seen" &&
    wait_for 10 "test -z \"\$(alive_of $seen)\""
'

test_expect_success 'disk: a mount over its thresholds is WARN, then FAIL' '
    "$CHECK" disk --mount "$TEST_DIR" --warn-pct 0 --fail-pct 100 >w &&
    jget "j[0][\"status\"] + \" \" + j[0][\"code\"]" <w >s && test "$(cat s)" = "WARN disk.low" &&
    "$CHECK" disk --mount "$TEST_DIR" --warn-pct 0 --fail-pct 0 >f &&
    jget "j[0][\"status\"] + \" \" + j[0][\"code\"]" <f >s && test "$(cat s)" = "FAIL disk.full" &&
    "$CHECK" disk --mount "$TEST_DIR" --warn-pct $warn_at --fail-pct 100 >p &&
    jget "j[0][\"status\"]" <p >s && test "$(cat s)" = PASS &&
    "$CHECK" disk --mount "$TEST_DIR/nonexistent" >m &&
    jget "j[0][\"code\"]" <m >s && test "$(cat s)" = disk.unavailable
'

test_expect_success 'lockstep-check: usage errors exit 2' '
    test_rc() { "$@" >/dev/null 2>&1; echo $?; } &&
    test "$(test_rc "$CHECK" nosuch)" = 2 &&
    test "$(test_rc "$CHECK" disk)" = 2 &&
    test "$(test_rc "$CHECK" disk --mount)" = 2 &&
    test "$(test_rc "$CHECK" pcie --expect x)" = 2 &&
    "$CHECK" --list | grep -qx pcie
'

test_done
