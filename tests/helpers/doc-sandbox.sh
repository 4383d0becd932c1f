# shellcheck shell=bash
# doc-sandbox.sh - the sandbox in which t0004 runs docs/operations.md's
# commands as an operator would run them on real machines (source it).
#
# Environment: ROOT (the DESTDIR the tree is installed into), PREFIX (the
# build's prefix), PORT (a free TCP port standing for 7300), BUILD_DIR,
# UNITS (a directory for the emulated units' pid files and logs).
#
# What stands in for what (t0004 also rewrites the document's text: paths
# under /usr/local, /etc/lockstep, /var/lib/lockstep*, /run/lockstep and
# /var/backups move under ROOT; sched.example.org:7300 and 0.0.0.0:7300
# become 127.0.0.1:PORT, and sched.example.org elsewhere (a name in the
# TLS certificate) 127.0.0.1; `meson setup` and `ninja` of the release build
# are skipped, the suite built the tree; `meson install -C build`
# installs this build into ROOT):
#   - the installed binaries come first on PATH; lockstepd and
#     lockstep-agent get -o overrides for their built-in default paths
#     (state_dir, socket, cluster_secret_file), which are outside ROOT
#     (and the agent a kill_grace_ms of 3 s, so that a stop is quick);
#   - the CLI's default socket is ROOT/run/lockstep/lockstepd.sock;
#   - the Python SDK is found where /usr/bin/python3 searches under the
#     prefix, moved into ROOT (PYTHONPATH);
#   - systemctl start/stop/restart/enable --now/disable --now run the
#     installed unit's ExecStartPre= and ExecStart= lines (paths moved into
#     ROOT) as the test's user, create its StateDirectory= and
#     RuntimeDirectory=, and wait until the daemon answers (the scheduler
#     on its socket, an agent's node UP); reload sends SIGHUP, as the
#     unit's ExecReload= does; daemon-reload does nothing;
#   - systemd-sysusers works on ROOT (--root), or, without systemd, the
#     sysusers.d lines are added to ROOT/etc/passwd and group;
#   - chgrp/chown to the lockstep user or group use its id from ROOT's
#     /etc/group and /etc/passwd (as root; as another user they only check
#     that it exists);
#   - scp HOST:PATH DEST copies PATH, and ssh HOST CMD... runs CMD here:
#     the scheduler machine is this one;
#   - systemctl reload sends SIGHUP to a unit that has an ExecReload= line
#     and waits for lockstepd to log that it read its secrets again;
#   - systemd-analyze verify checks the installed units with their paths
#     moved into ROOT; without systemd-analyze it says so and succeeds.

export PATH=$ROOT$PREFIX/bin:$PATH
export LOCKSTEP_SERVER=$ROOT/run/lockstep/lockstepd.sock
PYTHONPATH=$(/usr/bin/python3 -c '
import sys
root, prefix = sys.argv[1], sys.argv[2].rstrip("/")
print(":".join(root + p for p in sys.path if p.startswith(prefix + "/")))
' "$ROOT" "$PREFIX")
export PYTHONPATH

# daemon_argv NAME ARG...: sets argv to the installed daemon NAME with the
# overrides of its built-in default paths, then ARGs.
daemon_argv() {
    local name=$1
    shift
    argv=("$ROOT$PREFIX/bin/$name")
    case $name in
    lockstepd)
        argv+=(-o state_dir="$ROOT/var/lib/lockstep"
            -o socket="$ROOT/run/lockstep/lockstepd.sock"
            -o cluster_secret_file="$ROOT/etc/lockstep/cluster.secret")
        ;;
    lockstep-agent)
        argv+=(-o state_dir="$ROOT/var/lib/lockstep-agent"
            -o cluster_secret_file="$ROOT/etc/lockstep/cluster.secret"
            -o kill_grace_ms=3000 -o witness_port=0)
        ;;
    esac
    argv+=("$@")
}

lockstepd() {
    local -a argv
    daemon_argv lockstepd "$@"
    "${argv[@]}"
}

lockstep-agent() {
    local -a argv
    daemon_argv lockstep-agent "$@"
    "${argv[@]}"
}

# in_root: paths of a unit's lines moved into ROOT.
in_root() {
    sed "s|$PREFIX/|$ROOT$PREFIX/|g; s| /etc/lockstep/| $ROOT/etc/lockstep/|g"
}

unit_file() {
    local f=$ROOT$PREFIX/lib/systemd/system/${1%.service}.service
    [ -f "$f" ] || { echo "no unit file $f" >&2; return 1; }
    echo "$f"
}

# unit_argv LINE: sets argv to an Exec line, its binary with the overrides.
unit_argv() {
    local -a words
    read -r -a words <<<"$1"
    daemon_argv "${words[0]##*/}" "${words[@]:1}"
}

unit_start() {
    local name=${1%.service} f d line pid deadline
    local -a argv
    f=$(unit_file "$name") || return 1
    for d in $(sed -n 's/^StateDirectory=//p' "$f"); do
        mkdir -p "$ROOT/var/lib/$d"
    done
    for d in $(sed -n 's/^RuntimeDirectory=//p' "$f"); do
        mkdir -p "$ROOT/run/$d"
    done
    while IFS= read -r line; do
        unit_argv "$line"
        "${argv[@]}" || { echo "$name: ExecStartPre failed: $line" >&2; return 1; }
    done < <(sed -n 's/^ExecStartPre=//p' "$f" | in_root)
    line=$(sed -n 's/^ExecStart=//p' "$f" | in_root)
    unit_argv "$line"
    (exec "${argv[@]}" >>"$UNITS/$name.log" 2>&1 </dev/null) &
    pid=$!
    echo "$pid" >"$UNITS/$name.pid"
    deadline=$((SECONDS + 30))
    while :; do
        kill -0 "$pid" 2>/dev/null || { tail -n 20 "$UNITS/$name.log" >&2; return 1; }
        case $name in
        lockstepd) command lockstep whoami >/dev/null 2>&1 && return 0 ;;
        lockstep-agent)
            command lockstep node "$(hostname)" --json 2>/dev/null |
                grep -q '"state": *"UP"' && return 0
            ;;
        *) return 0 ;;
        esac
        [ $SECONDS -lt $deadline ] || {
            echo "$name did not come up" >&2
            tail -n 20 "$UNITS/$name.log" >&2
            return 1
        }
        sleep 0.2
    done
}

unit_stop() {
    local name=${1%.service} pid i
    [ -s "$UNITS/$name.pid" ] || return 0
    pid=$(<"$UNITS/$name.pid")
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 150; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "$name (pid $pid) ignored SIGTERM" >&2
        return 1
    fi
    rm -f "$UNITS/$name.pid"
}

unit_reload() {
    local name=${1%.service} f n i
    f=$(unit_file "$name") || return 1
    grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$f" ||
        { echo "$name: no ExecReload= that sends SIGHUP" >&2; return 1; }
    [ -s "$UNITS/$name.pid" ] || { echo "$name is not running" >&2; return 1; }
    n=$(grep -c 'SIGHUP: ' "$UNITS/$name.log" || true)
    kill -HUP "$(<"$UNITS/$name.pid")" || return 1
    [ "$name" = lockstepd ] || return 0
    for ((i = 0; i < 100; i++)); do
        [ "$(grep -c 'SIGHUP: ' "$UNITS/$name.log" || true)" -gt "$n" ] &&
            return 0
        sleep 0.1
    done
    echo "$name did not reload" >&2
    return 1
}

systemctl() {
    case $1 in
    daemon-reload) return 0 ;;
    reload) unit_reload "$2" ;;
    start) unit_start "$2" ;;
    stop) unit_stop "$2" ;;
    restart) unit_stop "$2" && unit_start "$2" ;;
    reload) unit_reload "$2" ;;
    enable)
        [ "$2" = --now ] || { unit_file "$2" >/dev/null; return; }
        unit_start "$3"
        ;;
    disable)
        [ "$2" = --now ] || { unit_file "$2" >/dev/null; return; }
        unit_stop "$3"
        ;;
    *)
        echo "systemctl $1: not emulated by doc-sandbox.sh" >&2
        return 1
        ;;
    esac
}

systemd-sysusers() {
    local f u name gecos home
    mkdir -p "$ROOT/etc"
    if command -v systemd-sysusers >/dev/null; then
        command systemd-sysusers --root="$ROOT" "$@"
        return
    fi
    for f in "$ROOT$PREFIX"/lib/sysusers.d/*.conf; do
        while read -r u name _ gecos; do
            [ "$u" = u ] || continue
            home=$(echo "$gecos" | sed 's/.*" *//')
            grep -q "^$name:" "$ROOT/etc/group" 2>/dev/null ||
                echo "$name:x:999:" >>"$ROOT/etc/group"
            grep -q "^$name:" "$ROOT/etc/passwd" 2>/dev/null ||
                echo "$name:x:999:999::$home:/usr/sbin/nologin" >>"$ROOT/etc/passwd"
        done <"$f"
    done
}

# root_id FILE NAME: the id of NAME in ROOT's passwd or group file.
root_id() {
    local id
    id=$(awk -F: -v n="$2" '$1 == n { print $3 }' "$ROOT/etc/$1" 2>/dev/null)
    [ -n "$id" ] || { echo "no '$2' in $ROOT/etc/$1" >&2; return 1; }
    echo "$id"
}

chgrp() {
    local gid
    gid=$(root_id group "$1") || return 1
    shift
    [ "$(id -u)" = 0 ] || return 0
    command chgrp "$gid" "$@"
}

chown() {
    local uid gid
    uid=$(root_id passwd "${1%%:*}") || return 1
    gid=$(root_id group "${1#*:}") || return 1
    shift
    [ "$(id -u)" = 0 ] || return 0
    command chown "$uid:$gid" "$@"
}

scp() {
    cp "${1#*:}" "$2"
}

ssh() {
    shift
    "$@"
}

systemd-analyze() {
    local d f
    if ! command -v systemd-analyze >/dev/null; then
        echo "systemd-analyze is not installed: units not verified"
        return 0
    fi
    [ "$1" = verify ] || { command systemd-analyze "$@"; return; }
    shift
    d=$(mktemp -d "$UNITS/verify.XXXXXX") || return 1
    for f in "$@"; do
        in_root <"$f" >"$d/${f##*/}"
    done
    command systemd-analyze verify --man=no "$d"/* >"$d.out" 2>&1
    local rc=$?
    cat "$d.out"
    [ $rc = 0 ] && ! [ -s "$d.out" ]
}
