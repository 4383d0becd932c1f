#!/usr/bin/python3
"""doc-blocks.py - the command blocks of a Markdown file, for the tests
that run a document's commands as written (t0003 the README, t0004
docs/operations.md).

    doc-blocks.py FILE sh         every ```sh block, in order, as one shell
                                  script; each block opens with a comment
                                  "# --- FILE:LINE"
    doc-blocks.py FILE commands   JSON: every command of the ```sh and
                                  ```console blocks, in order:
                                  [{"line": L, "lang": "sh"|"console",
                                    "cmd": TEXT, "output": [LINE...]}]
                                  (an sh block is one command, without
                                  output; in a console block a command is
                                  a "$ " line with its continuation lines,
                                  and its output is what follows up to the
                                  next "$ " line)
    doc-blocks.py FILE python     every ```python block, as JSON strings

Only fences that open a line with ``` count; the info string is the
language.
"""
import json
import re
import sys


def blocks(path):
    """(lang, first line number, lines) for every fenced block."""
    out, lang, start, body = [], None, 0, []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        m = re.match(r"^```\s*([A-Za-z0-9_+-]*)\s*$", line)
        if m and lang is None:
            lang, start, body = m.group(1), n + 1, []
        elif line.startswith("```") and lang is not None:
            out.append((lang, start, body))
            lang = None
        elif lang is not None:
            body.append(line)
    if lang is not None:
        sys.exit("%s: unterminated ``` block at line %d" % (path, start - 1))
    return out


def console_commands(start, body):
    cmds, cur = [], None
    for i, line in enumerate(body):
        if line.startswith("$ "):
            cur = {"line": start + i, "lang": "console", "cmd": line[2:],
                   "output": []}
            cmds.append(cur)
        elif cur is not None and cur["cmd"].endswith("\\") and not cur["output"]:
            cur["cmd"] += "\n" + line
        elif cur is not None:
            cur["output"].append(line)
    return cmds


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("sh", "commands", "python"):
        sys.exit(__doc__)
    path, what = sys.argv[1], sys.argv[2]
    bl = blocks(path)
    if what == "sh":
        for lang, start, body in bl:
            if lang == "sh":
                print("# --- %s:%d" % (path, start))
                print("\n".join(body))
    elif what == "python":
        print(json.dumps(["\n".join(b) for lang, _, b in bl
                          if lang == "python"]))
    else:
        cmds = []
        for lang, start, body in bl:
            if lang == "sh":
                cmds.append({"line": start, "lang": "sh",
                             "cmd": "\n".join(body), "output": []})
            elif lang == "console":
                cmds.extend(console_commands(start, body))
        print(json.dumps(cmds, indent=1))


main()
