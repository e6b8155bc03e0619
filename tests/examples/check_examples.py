#!/usr/bin/python3
"""The examples run as their header comments say, and show the bundled models working.

Usage: check_examples.py SOURCE_ROOT --build DIR   run the examples built in DIR with the arguments of
                                                   their comments, from SOURCE_ROOT (meson test)
       check_examples.py SOURCE_ROOT --installed   in a scratch folder beside SOURCE_ROOT's examples/,
                                                   models/ and schemas/, run each comment's commands as
                                                   written: cc against the installed library through
                                                   pkg-config, then the program (CI, after meson install)

A command in a header comment is a line " *   $ ..." and the lines after it while one ends in "\\".
Prints "N passed, N failed" and exits non-zero on failure.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata

ROOT, MODE = sys.argv[1], sys.argv[2]
RESULTS = []


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + detail))


def commands(source):
    """The shell commands of the first comment of an example, joined across continuation lines."""
    text = open(source, encoding="utf-8").read()
    comment = text[:text.index("*/")]
    out, cur = [], None
    for line in comment.splitlines():
        body = line[3:].strip() if line.startswith(" * ") else ""
        if cur is not None:
            cur += " " + body
        elif body.startswith("$ "):
            cur = body[2:]
        else:
            continue
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
        else:
            out.append(cur)
            cur = None
    return out


def columns(s):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def expect_score_labels(out):
    rows = out.splitlines()[3:16]
    check("score_labels puts 物流 first for 物流/很快", rows and rows[0].split()[0] == "物流", out)
    starts = {columns(r[:r.index("0.") if "0." in r else r.index("1.")]) for r in rows}
    check("score_labels: the probabilities line up under Chinese labels", len(rows) == 13 and len(starts) == 1, out)


EXPECT = {
    "score_labels": expect_score_labels,
    "extract_tagged": lambda out: check("extract_tagged finds 物流,很快,物流,正面 and 包装,很好,包装,正面",
                                        "1,物流,很快,物流,正面\n" in out and "1,包装,很好,包装,正面\n" in out, out),
    "extract_quads": lambda out: check("extract_quads generates _,很快,物流,正面", "1,_,很快,物流,正面\n" in out, out),
    "next_token": lambda out: check("next_token prints an id and a token", re.match(r"^\d+\t", out), out),
}


def run(cmd, cwd):
    p = subprocess.run(["bash", "-c", "set -e; " + cmd], cwd=cwd, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    names = sorted(f[:-2] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".c"))
    check("every example has its expectations", set(names) == set(EXPECT), str(names))
    scratch = tempfile.mkdtemp(prefix="pocketdec-examples-")  # the programs cc writes land here
    for d in ("examples", "models", "schemas"):
        os.symlink(os.path.abspath(os.path.join(ROOT, d)), os.path.join(scratch, d))
    for name in names:
        cmds = commands(os.path.join(ROOT, "examples", name + ".c"))
        build = [c for c in cmds if c.startswith("cc ")]
        runs = [c for c in cmds if c.startswith("./" + name + " ")]
        check(f"{name}: its comment has one cc command and one run command", len(build) == 1 and len(runs) == 1,
              str(cmds))
        if len(build) != 1 or len(runs) != 1:
            continue
        if MODE == "--installed":
            rc, out, err = run(build[0], scratch)
            check(f"{name}: builds as its comment says", rc == 0, err)
            rc, out, err = run(runs[0], scratch)
        else:
            rc, out, err = run(os.path.join(os.path.abspath(sys.argv[3]), name) + runs[0][len(name) + 2:], ROOT)
        check(f"{name}: runs as its comment says", rc == 0, err)
        EXPECT.get(name, lambda out: None)(out)
    shutil.rmtree(scratch)  # the links, not what they point to
    print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
    sys.exit(0 if all(RESULTS) else 1)


main()
