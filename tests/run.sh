#!/bin/bash
# run.sh - run the test suites of one build directory and end with the
# summary line CI reads: "N passed, N failed[, N skipped]".
#
#   tests/run.sh [BUILD_DIR] [meson test args...]
#
# Counts are per test case (TAP lines), over every suite that ran.
set -u
build=${1:-build}
shift || true
meson test -C "$build" --print-errorlogs --num-processes "${LOCKSTEP_TEST_JOBS:-2}" "$@"
rc=$?
/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, re, sys

passed = failed = skipped = 0
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError as e:
    print("# cannot read the test log: %s" % e)
    print("0 passed, 1 failed")
    sys.exit(0)
for line in lines:
    t = json.loads(line)
    out = (t.get("stdout") or "").splitlines()
    nok = 0
    for o in out:
        if re.match(r"^ok \d+.*# SKIP", o):
            skipped += 1
        elif re.match(r"^ok \d+", o):
            passed += 1
        elif re.match(r"^not ok \d+", o):
            failed += 1
            nok += 1
    ok_result = t.get("result") in ("OK", "SKIP", "EXPECTEDFAIL")
    # A test that crashed, leaked or timed out without a failing case
    # still counts as one failure; a passing test that is not TAP (an
    # exit-code test such as the SDK's pytest run) counts as one pass.
    if not ok_result and nok == 0:
        failed += 1
    elif ok_result and not any(re.match(r"^(not )?ok \d+", o) for o in out):
        passed += 1
line = "%d passed, %d failed" % (passed, failed)
if skipped:
    line += ", %d skipped" % skipped
print(line)
PY
exit $rc
