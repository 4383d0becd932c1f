#!/bin/bash
# t2010: the GPU and kernel-log checks as the agent runs them: the real
# `lockstep-check` binary, as a child process, against fake nvidia-smi
# programs (tests/helpers/fake-nvidia-smi-*) and kmsg fixture files.
# Issue 9's tests 3 and 4: each nvidia-smi scenario gives the right status
# and code and no broken one is a PASS, a hung nvidia-smi is killed at the
# check's own deadline (with what it started); a healthy boot gives no
# finding, an unknown line one, XID 79 a FAIL, and a second run of the same
# boot (an agent restart) re-raises nothing new. Then the same with a real
# agent and scheduler: an agent whose kernel log holds one unknown line is
# killed (-9) and started again on the same state directory, and the
# scheduler records no new finding and no new occurrence.
. "$(dirname "$0")/../lib/harness.sh"

CHECK=$BUILD_DIR/agent/lockstep-check
FIX=$SRC_DIR/tests/fixtures/kmsg
mkdir -p "$TEST_DIR/bin" "$TEST_DIR/state"
cp "$SRC_DIR"/tests/helpers/fake-nvidia-smi* "$TEST_DIR/bin/"

# gpu SCENARIO [OPTIONS]: run the GPU check against a fake into out.json
gpu() {
    local s=$1
    shift
    "$CHECK" gpu --nvidia-smi "$TEST_DIR/bin/fake-nvidia-smi-$s" --expect 8 \
        "$@" >out.json 2>err.txt
}

# has STATUS CODE [SCOPE]: out.json holds such a result
has() {
    jget "any(r['status'] == '$1' and r['code'] == '$2' and
        ('${3:-}' == '' or r['scope'] == '${3:-}') for r in j)" <out.json |
        grep -qx True || { cat out.json; return 1; }
}

# not_pass: some result of out.json is neither PASS nor SKIPPED
not_pass() {
    jget "any(r['status'] not in ('PASS', 'SKIPPED') for r in j)" <out.json |
        grep -qx True
}

test_expect_success 'healthy 8 GPUs: a PASS per GPU and for the count' '
    gpu healthy8 &&
    test "$(jget "len(j)" <out.json)" = 9 &&
    test "$(jget "sorted(set(r[\"status\"] for r in j))" <out.json)" = "[\"PASS\"]" &&
    has PASS gpu.count node && has PASS gpu.ok gpu:7 &&
    test "$(jget "[r for r in j if r[\"scope\"] == \"gpu:0\"][0][\"numbers\"][\"temperature_c\"]" <out.json)" = 30
'

test_expect_success '7 GPUs: FAIL gpu.missing' '
    gpu missing7 && has FAIL gpu.missing node && not_pass &&
    jget "[r[\"evidence\"] for r in j if r[\"code\"] == \"gpu.missing\"][0]" <out.json |
        grep -q "missing index 7"
'

test_expect_success 'uncorrectable ECC on GPU 3: FAIL for gpu:3 only' '
    gpu ecc-ue && has FAIL gpu.ecc_uncorrectable gpu:3 && not_pass &&
    test "$(jget "sum(r[\"status\"] == \"FAIL\" for r in j)" <out.json)" = 1
'

test_expect_success 'ECC disabled: FAIL gpu.ecc_disabled; WARN with --allow-ecc-off' '
    gpu ecc-off && has FAIL gpu.ecc_disabled gpu:0 && not_pass &&
    gpu ecc-off --allow-ecc-off && has WARN gpu.ecc_disabled gpu:0 &&
    ! has FAIL gpu.ecc_disabled gpu:0 >/dev/null
'

test_expect_success 'driver not loaded (exit 9): FAIL gpu.driver with the message' '
    gpu no-driver && has FAIL gpu.driver node && not_pass &&
    grep -q "communicate with the NVIDIA driver" out.json
'

test_expect_success 'truncated output: UNKNOWN gpu.smi_output, no count verdict' '
    gpu truncated && has UNKNOWN gpu.smi_output node && not_pass &&
    ! has PASS gpu.count node >/dev/null
'

test_expect_success '[N/A] fields: optional ones pass, an [N/A] ECC count is UNKNOWN' '
    gpu na && has UNKNOWN gpu.ecc_unknown gpu:5 && has PASS gpu.ok gpu:4 &&
    ! has PASS gpu.ok gpu:5 >/dev/null && not_pass
'

test_expect_success 'an older driver: falls back to clocks_throttle_reasons' '
    gpu old-driver && has PASS gpu.count node && ! not_pass
'

test_expect_success 'a hung nvidia-smi: TIMEOUT gpu.smi_timeout at the inner deadline, nothing left' '
    start=$(date +%s%N) &&
    gpu hang --timeout-ms 1500 &&
    ms=$(( ($(date +%s%N) - start) / 1000000 )) &&
    echo "took $ms ms" && test $ms -ge 1400 && test $ms -lt 4000 &&
    has TIMEOUT gpu.smi_timeout node && not_pass &&
    test -s bin/hang.pids &&
    for pid in $(cat bin/hang.pids); do
        st=$(ps -o stat= -p $pid) || st=gone
        echo "pid $pid: $st"; case $st in gone|Z*) ;; *) exit 1 ;; esac
    done
'

test_expect_success 'nvidia-smi missing: UNKNOWN gpu.smi_missing' '
    "$CHECK" gpu --nvidia-smi "$TEST_DIR/bin/nonexistent" --expect 8 >out.json &&
    has UNKNOWN gpu.smi_missing node
'

test_expect_success 'no GPU expected: SKIPPED; usage errors exit 2 with a message' '
    "$CHECK" gpu --nvidia-smi /bin/false --expect 0 >out.json &&
    has SKIPPED gpu.none_expected node &&
    { "$CHECK" gpu --nvidia-smi /bin/false >out.json 2>err.txt; test $? = 2; } &&
    grep -q "expect" err.txt &&
    { "$CHECK" gpu --nvidia-smi /bin/false --expect many 2>err.txt; test $? = 2; } &&
    grep -q "not a number" err.txt &&
    { "$CHECK" kmsg --state-dir . 2>err.txt; test $? = 2; } &&
    grep -q "path" err.txt
'

# kmsg RUN-OPTIONS: the kmsg check over log (boot id from boot) into out.json
kmsg() {
    "$CHECK" kmsg --path "$TEST_DIR/log" --state-dir "$TEST_DIR/state" \
        --allowlist "$SRC_DIR/agent/kmsg-allowlist.txt" \
        --baseline "$TEST_DIR/baseline.txt" \
        --boot-id-file "$TEST_DIR/boot" "$@" >out.json
}

# findings: the number of results other than kmsg.scan
findings() {
    jget "len([r for r in j if r[\"code\"] != \"kmsg.scan\"])" <out.json
}

# field CODE KEY: KEY of the result CODE (a number's name for numbers)
field() {
    jget "[r.get(\"$2\", r.get(\"numbers\", {}).get(\"$2\")) for r in j if r[\"code\"] == \"$1\"][0]" <out.json
}

test_expect_success 'kmsg: learn a baseline on another healthy boot' '
    "$CHECK" kmsg --learn "$TEST_DIR/baseline.txt" --path "$FIX/healthy-boot-b.txt" \
        --allowlist "$SRC_DIR/agent/kmsg-allowlist.txt" >out.json &&
    test "$(field kmsg.learned status)" = PASS &&
    grep -q "<pci>" baseline.txt
'

test_expect_success 'kmsg: a healthy boot yields no finding' '
    cp "$FIX/healthy-boot.txt" log && echo 3f1c-boot-1 >boot &&
    kmsg && test "$(findings)" = 0 && test "$(field kmsg.scan records)" = 218
'

test_expect_success 'kmsg: an unknown line and XID 79 after the cursor: WARN and FAIL' '
    echo "3,218,9000000000,-;foo_drv 0000:18:00.0: widget 7 stalled" >>log &&
    echo "3,219,9000000100,-;NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus." >>log &&
    kmsg && test "$(findings)" = 2 &&
    test "$(field kmsg.scan records)" = 2 &&
    has FAIL kmsg.xid.79 pci:0000:18:00 &&
    test "$(field kmsg.unknown status)" = WARN &&
    test "$(field kmsg.unknown count)" = 1
'

test_expect_success 'kmsg: a restart in the same boot re-raises nothing new' '
    kmsg && test "$(findings)" = 2 &&
    test "$(field kmsg.scan records)" = 0 &&
    test "$(field kmsg.unknown count)" = 1 && test "$(field kmsg.unknown new)" = 0 &&
    test "$(field kmsg.xid.79 count)" = 1 && test "$(field kmsg.xid.79 new)" = 0 &&
    test ! -e state/kmsg-state.json.tmp
'

test_expect_success 'kmsg: the same line again (other numbers) counts up the same finding' '
    echo "3,220,9000000200,-;foo_drv 0000:2a:00.0: widget 12 stalled" >>log &&
    kmsg && test "$(findings)" = 2 &&
    test "$(field kmsg.unknown count)" = 2 && test "$(field kmsg.unknown new)" = 1
'

test_expect_success 'kmsg: a new boot id starts the cursor and findings afresh' '
    cp "$FIX/healthy-boot.txt" log && echo 3f1c-boot-2 >boot &&
    kmsg && test "$(findings)" = 0 && test "$(field kmsg.scan records)" = 218
'

# The agent's kmsg check alone, every second, over a log of its own.
AGENT_KMSG=(-o health_checks=kmsg -o kmsg_path="$TEST_DIR/agentlog"
    -o kmsg_allowlist="$SRC_DIR/agent/kmsg-allowlist.txt"
    -o kmsg_baseline="$TEST_DIR/baseline.txt" -o health_interval_ms=1000)

# unknown_finding: "open count consecutive first_ms" of every kmsg.unknown
# finding the scheduler has of n1, one a line.
unknown_finding() {
    ls_cli node n1 --json |
        jget "\"\\n\".join(\"%s %d %d %d\" % (f[\"open\"], f[\"count\"], f[\"consecutive\"], f[\"first_ms\"]) for f in j[\"findings\"] if f[\"code\"] == \"kmsg.unknown\")"
}
# new_runs T: the highest run of n1's kmsg check among results made after
# T (ms): the restarted agent's runs, counted from 1 again.
new_runs() {
    ls_cli node n1 --json |
        jget "max([r[\"run\"] for c in j[\"checks\"] if c[\"check\"] == \"kmsg\" for r in c[\"results\"] if r[\"at_ms\"] > $1] or [0])"
}

# health_soft_repeats=2: a WARN raised again by one more run would
# exclude the node, so a restart that re-raised would show in its state.
test_expect_success 'agent: an unknown kernel line opens one finding, SUSPECT' '
    cp "$FIX/healthy-boot.txt" agentlog &&
    echo "3,218,9000000000,-;foo_drv 0000:18:00.0: widget 7 stalled" >>agentlog &&
    start_scheduler -o health_soft_repeats=2 &&
    start_agent n1 "${AGENT_KMSG[@]}" &&
    wait_for 30 "test \"\$(node_state n1)\" = SUSPECT" &&
    wait_for 10 "test \$(new_runs 0) -ge 2" &&
    unknown_finding >before && cat before &&
    test "$(wc -l <before)" = 1 && grep -q "^True 1 1 " before &&
    db_events node/n1 | grep -c "health_finding" >events.before &&
    test "$(cat events.before)" = 1
'

test_expect_success 'agent: killed and restarted in the same boot, it re-raises nothing' '
    kill_agent n1 && t=$(date +%s%3N) &&
    start_agent n1 "${AGENT_KMSG[@]}" &&
    wait_for 30 "test \$(new_runs $t) -ge 3" &&
    grep -c "health check=kmsg run=1 status=WARN code=kmsg.unknown " agent-n1/log >runs1 &&
    test "$(cat runs1)" = 2 &&
    unknown_finding >after && cat after &&
    test "$(cat after)" = "$(cat before)" &&
    test "$(node_state n1)" = SUSPECT &&
    test "$(db_events node/n1 | grep -c "health_finding")" = "$(cat events.before)" &&
    ls_cli node n1 --json |
        jget "[r[\"numbers\"][\"new\"] for c in j[\"checks\"] if c[\"check\"] == \"kmsg\" for r in c[\"results\"] if r[\"code\"] == \"kmsg.unknown\"][0]" >new &&
    test "$(cat new)" = 0
'

test_done
