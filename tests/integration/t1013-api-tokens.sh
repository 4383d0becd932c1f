#!/bin/bash
# t1013: bearer tokens expire (--ttl; 30 days by default), can be listed
# (one's own; an operator's: all; never a secret) and revoked (one's own,
# or any by an operator); an expired or revoked token fails on its next
# request with a 401 that says so. The last-used time is written at most
# once a minute per token.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler

# with TOKENFILE CLI-ARGS...: the CLI over TCP with that token.
with() {
    local tok=$1
    shift
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat "$TEST_DIR/$tok") \
        ls_cli "$@"
}

test_expect_success 'create: the default lifetime is 30 days; --ttl sets it' '
    ls_cli token create --user alice --json >a.json &&
    jget "j[\"token\"]" <a.json >alice.tok &&
    jget "j[\"id\"]" <a.json >alice.id &&
    created=$(db_query "SELECT created_ms FROM tokens WHERE id = $(cat alice.id)") &&
    test "$(jget "j[\"expires_ms\"]" <a.json)" -ge $((created + 30 * 86400000 - 5000)) &&
    test "$(jget "j[\"expires_ms\"]" <a.json)" -le $((created + 30 * 86400000 + 5000)) &&
    ls_cli token create --user alice --ttl 2s >alice2.tok &&
    ls_cli token create --user bob >bob.tok &&
    ls_cli token create --user carol --ttl never --json | jget "j[\"expires_ms\"]" | grep -qx 0 &&
    ! ls_cli token create --user x --ttl soon 2>err && grep -q "invalid --ttl" err
'

test_expect_success 'an expired token fails on its next request (401, says so)' '
    with alice2.tok whoami | grep -q alice &&
    sleep 2.5 &&
    ! with alice2.tok whoami 2>err && cat err && grep -q "expired" err &&
    code=$(curl -s -o body -w "%{http_code}" \
        -H "Authorization: Bearer $(cat alice2.tok)" "$LOCKSTEP_URL/v1/jobs") &&
    test "$code" = 401 && grep -q "expired" body &&
    with alice.tok whoami | grep -q alice
'

test_expect_success 'list: own tokens for a user, all for an operator, never a secret' '
    with alice.tok token list --json >al.json &&
    test "$(jget "sorted(set(t[\"user\"] for t in j))" <al.json)" = "[\"alice\"]" &&
    test "$(jget "len(j)" <al.json)" = 2 &&
    ! grep -q "$(cat alice.tok)" al.json && ! grep -q hash al.json &&
    jget "[t[\"state\"] for t in j]" <al.json | grep -qx "\[\"valid\", \"expired\"\]" &&
    jget "j[0][\"prefix\"]" <al.json | grep -qx "$(cut -c1-12 alice.tok)" &&
    ls_cli token list --json >all.json &&
    test "$(jget "sorted(set(t[\"user\"] for t in j))" <all.json)" = "[\"alice\", \"bob\", \"carol\"]" &&
    ! grep -q "$(cat bob.tok)" all.json &&
    ls_cli token list >table && grep -q "LAST USED" table && grep -q "bob" table &&
    ! with alice.tok token list --user bob 2>err && grep -q "only operators" err
'

test_expect_success 'last used is written at most once a minute' '
    t1=$(db_query "SELECT last_used_ms FROM tokens WHERE id = $(cat alice.id)") &&
    test "$t1" -gt 0 &&
    sleep 1.1 && with alice.tok whoami >/dev/null && with alice.tok jobs >/dev/null &&
    test "$(db_query "SELECT last_used_ms FROM tokens WHERE id = $(cat alice.id)")" = "$t1" &&
    with alice.tok token list --json | jget "j[0][\"last_used_ms\"]" | grep -qx "$t1"
'

test_expect_success 'revoke: not another user'"'"'s (403); one'"'"'s own: 401 from the next request' '
    bob_id=$(ls_cli token list --user bob --json | jget "j[0][\"id\"]") &&
    ! with alice.tok token revoke $bob_id 2>err && grep -q "operator role" err &&
    with bob.tok whoami | grep -q bob &&
    ls_cli events --kind request_refused --json | grep -q "/v1/tokens/$bob_id/revoke" &&
    with alice.tok token revoke $(cat alice.id) | grep -q "token $(cat alice.id) revoked" &&
    ! with alice.tok whoami 2>err && grep -q "revoked" err &&
    code=$(curl -s -o body -w "%{http_code}" \
        -H "Authorization: Bearer $(cat alice.tok)" "$LOCKSTEP_URL/v1/whoami") &&
    test "$code" = 401 && grep -q "was revoked" body
'

test_expect_success 'an operator revokes any token; revoked stays revoked across a restart' '
    ls_cli token revoke $bob_id &&
    ! with bob.tok whoami 2>err && grep -q "revoked" err &&
    ! ls_cli token revoke 999 2>err && grep -q "no token 999" err &&
    stop_scheduler && start_scheduler &&
    ! with bob.tok whoami 2>err && grep -q "revoked" err &&
    ls_cli token list --json | jget "[t[\"state\"] for t in j if t[\"user\"] == \"bob\"]" |
        grep -qx "\[\"revoked\"\]"
'

test_done
