#!/bin/bash
# t1021: the authorization and visibility matrix (issue 11, "What must be
# true" 1). Every route of the route table (lockstepd --dump-routes) has
# a row in tests/fixtures/authz-matrix.json, and a section in
# docs/api.md with a Visibility: line; each row's request, sent as each
# principal (no credential, alice's token, bob's, an operator's, alice's
# expired and revoked tokens, the agent of the row's node, the agent of
# another node, a replayed agent request), gets the status the row gives
# it, and its reply shows and hides what the row says (another user's
# command line, environment, output and failure evidence never).
. "$(dirname "$0")/../lib/harness.sh"

# blame_threshold 1: alice's failed job excludes n1, so that n1's events
# carry her failure's evidence twice (node_blamed, node_excluded).
start_scheduler -o blame_threshold=1
start_agent n1

test_expect_success 'the cluster: one node; alice, bob, an operator; an expired and a revoked token' '
    wait_nodes_up 1 30 &&
    tok() { ls_cli token create --json "$@" | jget "j[\"token\"]"; } &&
    alice=$(tok --user alice) && bob=$(tok --user bob) &&
    carol=$(tok --user carol --role operator) &&
    expired=$(tok --user alice --ttl 1s) &&
    ls_cli token create --user alice --json >r.json &&
    revoked=$(jget "j[\"token\"]" <r.json) &&
    ls_cli token revoke "$(jget "j[\"id\"]" <r.json)" &&
    printf "{\"alice\":\"%s\",\"bob\":\"%s\",\"carol\":\"%s\",\"alice_expired\":\"%s\",\"alice_revoked\":\"%s\"}\n" \
        "$alice" "$bob" "$carol" "$expired" "$revoked" >tokens.json &&
    wait_for 10 "test \"\$(curl -s -o /dev/null -w %{http_code} -H \"Authorization: Bearer $expired\" $LOCKSTEP_URL/v1/whoami)\" = 401" &&
    "$LOCKSTEPD" --dump-routes >routes &&
    test "$(wc -l <routes)" -ge 30
'

test_expect_success 'the matrix' '
    "$PY" "$SRC_DIR/tests/helpers/authz-matrix.py" "$LOCKSTEP_URL" \
        "$SRC_DIR/tests/fixtures/authz-matrix.json" routes \
        "$SRC_DIR/docs/api.md" "$CLUSTER_SECRET" tokens.json >matrix.tap;
    rc=$?; grep -c "^ok" matrix.tap; grep -A3 "^not ok" matrix.tap; test $rc = 0
'

test_expect_success 'a route without a row fails the matrix' '
    { cat routes; echo "GET /v1/secret-new-route user"; } >routes.more &&
    ! "$PY" "$SRC_DIR/tests/helpers/authz-matrix.py" "$LOCKSTEP_URL" \
        "$SRC_DIR/tests/fixtures/authz-matrix.json" routes.more \
        "$SRC_DIR/docs/api.md" "$CLUSTER_SECRET" tokens.json \
        --table-only >more.tap &&
    grep -A1 "^not ok .* every route has a row" more.tap | grep -q "no row for GET /v1/secret-new-route"
'

test_done
