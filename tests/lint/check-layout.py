#!/usr/bin/env python3
"""check-layout.py - the rules of the source layout, as TAP

docs/architecture.md states them; this makes them build facts:

 1. no include cycle among the modules of scheduler/, of agent/, of cli/
    and of common/ (a module is a file stem: x.c and x.h are one node; an
    edge is an #include "dir/y.h" between two of them, a header without
    code of its own, like a private x_int.h, passing on what it includes),
    and no daemon includes another's headers (common/ includes only
    common/);
 2. only the store (scheduler/db*.c) includes sqlite3.h or holds SQL;
 3. the pure model (the files of model_lib in scheduler/meson.build)
    includes no libuv, SQLite, libcurl or http_parser header;
 4. a job's or an attempt's state is assigned only by the transition
    functions of scheduler/job.c, and those are called only by the event
    path (scheduler/event.c); the store's loaders and the constructors
    set a state by building the object, which is allowed;
 5. no source file over 1,000 lines and no function over 100 lines
    (tests excluded), and no API handler over 45 lines.

With a build directory, rule 1 is also checked on what the compiler
built: the symbols each object file defines and uses (nm) give the call
graph between files, which must have no cycle either. Files behind one
private header (db_*.c with db_int.h, http_*.c with http_int.h) are one
module split by concern, so calls among them do not count.

Usage: check-layout.py [SOURCE_ROOT [BUILD_DIR]]
       check-layout.py --self-test   (each rule fails on a tree made to
                                      break it)
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 and
                       sys.argv[1] != "--self-test" else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
DIRS = ["common", "scheduler", "agent", "cli"]
MAX_FILE_LINES = 1000
MAX_FUNC_LINES = 100
MAX_HANDLER_LINES = 45

results = []


def ok(cond, name, diag=()):
    results.append((bool(cond), name, list(diag)))


def sources(d):
    out = []
    for f in sorted(os.listdir(os.path.join(ROOT, d))):
        if f.endswith((".c", ".h")):
            out.append(os.path.join(d, f))
    return out


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8",
              errors="replace") as f:
        return f.read()


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)


def stem(path):
    """The module of a file: its name without the extension (x.c and x.h
    are one module)."""
    return os.path.splitext(os.path.basename(path))[0]


INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:([a-z]+)/)?([^"]+)\.h"', re.M)


def include_graph(d):
    """{module: {modules it includes}} within directory d, over the
    modules that have code (a .c file). A header without a .c of its own
    (a private header like db_int.h) is transparent: whoever includes it
    includes what it includes."""
    direct = {}
    for p in sources(d):
        deps = direct.setdefault(stem(p), set())
        for m in INCLUDE.finditer(strip_comments(read(p))):
            where, name = m.group(1), m.group(2)
            # common/ includes its siblings without the directory.
            if (where == d or (where is None and d == "common")) and \
                    os.path.exists(os.path.join(ROOT, d, name + ".h")):
                deps.add(name)
    code = {stem(p) for p in sources(d) if p.endswith(".c")}

    def reach(mod, seen):
        for dep in direct.get(mod, ()):
            if dep in seen:
                continue
            seen.add(dep)
            if dep not in code:
                reach(dep, seen)
        return seen

    graph = {}
    for mod in code:
        graph[mod] = {m for m in reach(mod, set()) if m in code and
                      m != mod}
    return graph


def find_cycle(graph):
    """One cycle as a list of modules, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check_includes():
    for d in DIRS:
        cycle = find_cycle(include_graph(d))
        ok(cycle is None, "no include cycle among the modules of %s/" % d,
           ["cycle: " + " -> ".join(cycle)] if cycle else [])
    for d in DIRS:
        bad = []
        allowed = {d, "common"} if d != "common" else {"common"}
        for p in sources(d):
            for m in INCLUDE.finditer(strip_comments(read(p))):
                where = m.group(1)
                if where and where not in allowed and where in DIRS:
                    bad.append("%s includes %s/%s.h" % (p, where,
                                                        m.group(2)))
        ok(not bad, "%s/ includes no other daemon's headers" % d, bad)


def family(d, module):
    """The module a file belongs to for the call graph: X for X_*.c when
    d/X_int.h exists (one module behind a private header)."""
    parts = module.split("_")
    for n in range(len(parts) - 1, 0, -1):
        prefix = "_".join(parts[:n])
        if os.path.exists(os.path.join(ROOT, d, prefix + "_int.h")):
            return prefix
    return module


def call_graph(d):
    """{module: {modules whose functions or data it uses}} from the object
    files of directory d in the build, or None when there are none."""
    objs = glob.glob(os.path.join(BUILD, d, "*.p", "*.c.o"))
    if not objs:
        return None
    defined, used = {}, {}
    for o in objs:
        mod = family(d, os.path.basename(o)[:-len(".c.o")])
        out = subprocess.run(["nm", o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                defined[f[2]] = mod
            elif len(f) == 2 and f[0] == "U":
                used.setdefault(mod, set()).add(f[1])
    graph = {}
    for mod, syms in used.items():
        deps = graph.setdefault(mod, set())
        for sym in syms:
            if sym in defined and defined[sym] != mod:
                deps.add(defined[sym])
    return graph


def check_calls():
    if BUILD is None:
        return
    for d in DIRS:
        graph = call_graph(d)
        if graph is None:
            ok(False, "the objects of %s/ are in %s" % (d, BUILD))
            continue
        cycle = find_cycle(graph)
        ok(cycle is None, "no call cycle among the files of %s/" % d,
           ["cycle: " + " -> ".join(cycle)] if cycle else [])


SQL = re.compile(r'"\s*(SELECT|INSERT INTO|UPDATE [a-z_]+ SET|DELETE FROM|'
                 r'CREATE (TABLE|INDEX)|PRAGMA|BEGIN IMMEDIATE)\b')


def is_store(path):
    return re.match(r"scheduler/db(_[a-z]+)?\.(c|h)$", path) is not None


def check_store():
    bad_inc, bad_sql = [], []
    for d in DIRS:
        for p in sources(d):
            text = strip_comments(read(p))
            if is_store(p):
                continue
            if re.search(r"#\s*include\s*<sqlite3\.h>", text):
                bad_inc.append(p)
            for i, line in enumerate(text.split("\n"), 1):
                if SQL.search(line):
                    bad_sql.append("%s:%d: %s" % (p, i, line.strip()))
    ok(not bad_inc, "only scheduler/db*.c include sqlite3.h", bad_inc)
    ok(not bad_sql, "no SQL outside scheduler/db*.c", bad_sql)


def model_files():
    text = read("scheduler/meson.build")
    m = re.search(r"model_lib = static_library\((.*?)\)", text, re.S)
    return ["scheduler/" + f for f in re.findall(r"'([a-z_]+\.c)'",
                                                 m.group(1))] if m else []


def check_model():
    files = model_files()
    ok(len(files) >= 5, "scheduler/meson.build names the model's files",
       files)
    bad = []
    for p in files:
        for h in [p, p[:-2] + ".h"]:
            if not os.path.exists(os.path.join(ROOT, h)):
                continue
            text = strip_comments(read(h))
            for m in re.finditer(r"#\s*include\s*<(uv|sqlite3|curl/curl|"
                                 r"http_parser)\.h>", text):
                bad.append("%s includes <%s.h>" % (h, m.group(1)))
            for m in INCLUDE.finditer(text):
                if m.group(1) == "scheduler" and "scheduler/%s.c" % \
                        m.group(2) not in files and m.group(2) not in \
                        ("sched_pass",):
                    bad.append("%s includes scheduler/%s.h, which is not "
                               "part of the model" % (h, m.group(2)))
    ok(not bad, "the model includes no I/O library and nothing above it",
       bad)


STATE_SET = re.compile(r"(\w+)\s*(->|\.)\s*state\s*=[^=]")


def check_states():
    bad = []
    calls = []
    allowed_set = {"scheduler/job.c"}
    for p in sources("scheduler"):
        text = strip_comments(read(p))
        lines = text.split("\n")
        for i, line in enumerate(lines, 1):
            for m in STATE_SET.finditer(line):
                rhs = line[m.end() - 1:]
                job_state = re.search(r"PROTO_(JOB|ATTEMPT)_[A-Z]+", rhs)
                obj = m.group(1)
                if p in allowed_set or is_store(p):
                    continue
                if job_state or obj in ("job", "a", "attempt", "j", "cur",
                                        "live"):
                    # attempt.c's constructor builds a new attempt.
                    if p == "scheduler/attempt.c" and "STARTING" in rhs:
                        continue
                    bad.append("%s:%d: %s" % (p, i, line.strip()))
            if re.search(r"\b(job|attempt)_transition\s*\(", line) and \
                    p not in ("scheduler/event.c", "scheduler/job.c",
                              "scheduler/job.h"):
                calls.append("%s:%d: %s" % (p, i, line.strip()))
    ok(not bad, "job and attempt states are assigned only by job.c's "
       "transitions", bad)
    ok(not calls, "only the event path (event.c) applies transitions",
       calls)


def functions(text):
    """(name, first line, length) of every definition whose name starts
    its line and whose body opens with a '{' line of its own."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^([A-Za-z_]\w*)\(", lines[i])
        if m:
            j = i
            while j < len(lines) and lines[j] != "{" and \
                    not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j] == "{":
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                yield m.group(1), i + 1, k - i + 1
                i = k
        i += 1


def check_sizes():
    big_files, big_funcs, big_handlers = [], [], []
    for d in DIRS:
        for p in sources(d):
            text = read(p)
            n = text.count("\n")
            if n > MAX_FILE_LINES:
                big_files.append("%s: %d lines" % (p, n))
            if not p.endswith(".c"):
                continue
            for name, line, length in functions(text):
                if length > MAX_FUNC_LINES:
                    big_funcs.append("%s:%d %s: %d lines" % (p, line, name,
                                                             length))
                if re.match(r"scheduler/api_\w+\.c$", p) and \
                        re.match(r"api_[a-z]+_[a-z]+$", name) and \
                        length > MAX_HANDLER_LINES:
                    big_handlers.append("%s:%d %s: %d lines" % (p, line,
                                                                name, length))
    ok(not big_files, "no source file over %d lines" % MAX_FILE_LINES,
       big_files)
    ok(not big_funcs, "no function over %d lines" % MAX_FUNC_LINES,
       big_funcs)
    ok(not big_handlers, "no API handler over %d lines" % MAX_HANDLER_LINES,
       big_handlers)


BROKEN_TREES = {
    # rule name (a prefix of the test's name): files of a tree breaking it
    "no include cycle among the modules of scheduler/": {
        "scheduler/a.c": '#include "scheduler/b.h"\n',
        "scheduler/a.h": "",
        "scheduler/b.c": '#include "scheduler/c.h"\n',
        "scheduler/b.h": "",
        "scheduler/c.c": "",
        "scheduler/c.h": '#include "scheduler/a_int.h"\n',
        "scheduler/a_int.h": '#include "scheduler/a.h"\n',
    },
    "agent/ includes no other daemon's headers": {
        "agent/a.c": '#include "scheduler/schedd.h"\n',
    },
    "only scheduler/db*.c include sqlite3.h": {
        "scheduler/status.c": "#include <sqlite3.h>\n",
    },
    "no SQL outside scheduler/db*.c": {
        "cli/x.c": 'const char *q = "SELECT id FROM jobs";\n',
    },
    "job and attempt states are assigned only": {
        "scheduler/status.c": "void\nf(void)\n{\n    a->state = "
                              "PROTO_ATTEMPT_FAILED;\n}\n",
    },
    "only the event path (event.c) applies transitions": {
        "scheduler/nodes.c": "void\nf(void)\n{\n    job_transition(job, "
                             "PROTO_JOB_FAILED);\n}\n",
    },
    "no source file over": {
        "common/big.c": "int x;\n" * 1001,
    },
    "no function over": {
        "agent/long.c": "int\nf(void)\n{\n" + "    ;\n" * 100 + "}\n",
    },
    "no API handler over": {
        "scheduler/api_x.c": "int\napi_x_get(void)\n{\n" + "    ;\n" * 45 +
                             "}\n",
    },
}


def self_test():
    """Each rule must fail on a tree made to break it (and the rules'
    names must still match this table)."""
    import tempfile
    global ROOT, BUILD, results
    checks = []
    for rule, files in sorted(BROKEN_TREES.items()):
        with tempfile.TemporaryDirectory() as tmp:
            for d in DIRS:
                os.makedirs(os.path.join(tmp, d))
            with open(os.path.join(tmp, "scheduler", "meson.build"), "w") as f:
                f.write("model_lib = static_library('m',\n  'job.c',\n)\n")
            for path, text in files.items():
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
            ROOT, BUILD, results = tmp, None, []
            check_includes()
            check_store()
            check_states()
            check_sizes()
            hit = [r for r in results if r[1].startswith(rule)]
            checks.append((len(hit) == 1 and not hit[0][0],
                           "the rule '%s' catches a tree that breaks it" %
                           rule, [] if hit else ["no such rule"]))
    results = checks


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        self_test()
        return report()
    check_includes()
    check_calls()
    check_store()
    check_model()
    check_states()
    check_sizes()
    return report()


def report():
    print("1..%d" % len(results))
    for i, (passed, name, diag) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if passed else "not ok", i, name))
        for line in diag:
            print("# " + line)
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
