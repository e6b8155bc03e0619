#!/usr/bin/python3
"""What a new user meets first, on the bundled default (models/tianchi) and the real dev reviews:
progress lines of `extract --progress`, the bundle folder as --model, usage errors that exit 2, and
messages that speak of options and files, never of the library's C functions.

Usage: test_quickstart.py POCKETDEC SOURCE_ROOT
Prints "N passed, N failed" and exits non-zero on failure.
"""
import os
import re
import subprocess
import sys
import tempfile

PD, ROOT = sys.argv[1:3]
M = os.path.join(ROOT, "models", "tianchi")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
DEV = os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv")
EXPLICIT = ["--model", os.path.join(M, "base"), "--adapter", os.path.join(M, "adapter"), "--head",
            os.path.join(M, "head")]
RESULTS = []


def run(*args, stdin=None):
    p = subprocess.run([PD, *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:600]))


def no_function_names(err):
    return not re.search(r"\bpd_[a-z_]+", err)


def first_reviews(tmp, n):
    path = os.path.join(tmp, "dev-%d.csv" % n)
    with open(DEV, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        out.writelines(line for _, line in zip(range(n + 1), f))
    return path


def test_progress(tmp):
    src = first_reviews(tmp, 5)
    args = ["extract", *EXPLICIT, "--schema", SCHEMA, "--input", src, "--output", "-"]
    rc, plain, err = run(*args)
    check("extract without --progress: only the summary line on a pipe", rc == 0 and err.count("\n") == 1, err)
    rc, out, err = run(*args, "--progress", "0")
    lines = err.splitlines()
    check("extract --progress 0: a line a review, then the summary, even when stderr is a pipe",
          rc == 0 and len(lines) == 6 and all(re.match(r"pocketdec extract: +\d+% of .*dev-5.csv, \d+ reviews, \d+ records, "
                                                      r"[\d.]+ reviews/s$", x) for x in lines[:5])
          and lines[4].startswith("pocketdec extract: 100% of") and " 5 reviews," in lines[4]
          and lines[5].startswith("pocketdec extract: 5 reviews,"), err)
    check("extract --progress: the same rows", out == plain, out)
    rc, out, err = run(*args, "--progress", "3600")
    check("extract --progress 3600: no line before the summary", rc == 0 and err.count("\n") == 1, err)
    with open(src, "rb") as f:
        rc, out, err = run(*args[:-4], "--input", "-", "--output", "-", "--progress", "0", stdin=f.read())
    check("extract --progress from stdin: a count without a share", rc == 0 and
          "pocketdec extract: 1 reviews," in err and "%" not in err, err)
    rc, _, err = run(*args, "--progress", "soon")
    check("extract --progress soon is a usage error", rc == 2 and "--progress" in err, err)


def test_bundle(tmp):
    src = first_reviews(tmp, 20)
    tail = ["--schema", SCHEMA, "--input", src, "--output", "-"]
    rc, want, err = run("extract", *EXPLICIT, *tail)
    rc2, got, err2 = run("extract", "--model", M, *tail)
    check("extract --model models/tianchi (the bundle folder) = base + adapter + head", rc == 0 and rc2 == 0
          and got == want and "物流" in got, err + err2)
    text = "物流很快，第二天就到了，包装也很好"
    rc, want, err = run("tag", *EXPLICIT, "--schema", SCHEMA, "--text", text)
    rc2, got, err2 = run("tag", "--model", M, "--schema", SCHEMA, "--text", text)
    check("tag --model models/tianchi: the same pass", rc == 0 and got == want and '"物流"' in got, err + err2)
    rc, out, err = run("info", "--model", M)
    check("info --model models/tianchi describes base/", rc == 0 and "tianchi/base" in out, err)
    gen = os.path.join(ROOT, "models", "tianchi-gen")
    q = ["--text", text, "--question", "属性：物流；观点：很快", "--candidate", "包装/正面", "--candidate", "物流/正面"]
    rc, want, err = run("score", "--model", os.path.join(gen, "base"), "--adapter", os.path.join(gen, "adapter"),
                        "--head", os.path.join(gen, "head"), *q)
    rc2, got, err2 = run("score", "--model", gen, *q)
    check("score --model models/tianchi-gen (a bundle with a pointer head)", rc == 0 and got == want, err + err2)
    rc, out, err = run("--help")
    check("--help says what a bundle folder holds", rc == 0 and "base/, adapter/" in out and "head/" in out, out)
    rc, _, err = run("info", "--model", os.path.join(ROOT, "models"))
    check("a folder that is neither a model nor a bundle: one line naming config.json", rc == 1
          and err.count("\n") == 1 and "config.json" in err, err)


def test_errors():
    text = "物流很快"
    rc, _, err = run("score", "--model", os.path.join(M, "base"), "--text", text)
    check("score without --candidate: usage error, exit 2", rc == 2 and "--candidate" in err
          and no_function_names(err), err)
    rc, _, err = run("score", "--model", M, "--text", text, "--candidate", "物流")
    check("score with the bundle's tagger head: one line saying what to run instead", rc == 1
          and err.count("\n") == 1 and "pocketdec tag" in err and no_function_names(err), err)
    rc, _, err = run("tag", "--model", os.path.join(M, "base"), "--schema", SCHEMA, "--text", text)
    check("tag without a head: usage error, exit 2", rc == 2 and "--head" in err, err)
    rc, _, err = run("tag", "--model", M, "--head", os.path.join(ROOT, "models", "tianchi-gen", "head"), "--schema",
                     SCHEMA, "--text", text)
    check("tag with a pointer head: one line without function names", rc == 1 and "not a tagger head" in err
          and no_function_names(err), err)
    rc, _, err = run("score", "--model", os.path.join(M, "base"), "--text", text, "--candidate", "")
    check("score with an empty candidate: no function name", rc == 1 and "is empty" in err
          and no_function_names(err), err)
    rc, _, err = run("score", "--model", os.path.join(M, "base"), "--jsonl",
                     stdin='{"text": "x", "candidates": []}\n'.encode())
    check("score --jsonl with no candidates: the line, no function name", rc == 1 and "stdin:1: " in err
          and no_function_names(err), err)


with tempfile.TemporaryDirectory() as tmp:
    for t in [test_progress, test_bundle, lambda _: test_errors()]:
        t(tmp)
print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
sys.exit(0 if all(RESULTS) else 1)
