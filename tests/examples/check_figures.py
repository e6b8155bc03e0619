#!/usr/bin/python3
"""The bundled default's figures, recorded once in models/tianchi/figures.json, and every quote of them.

  check_figures.py SOURCE_ROOT POCKETDEC TIANCHI_EVAL

- the record is true: the bundled default extracts the dev split (pocketdec extract) and tianchi-eval
  scores it to the recorded F1, precision, recall and pairs F1 (4 decimals);
- README.md, docs/extraction-by-decisions.md and models/tianchi/README.md quote the recorded dev F1 and
  fold mean +- SE;
- no sentence of README.md, docs/*.md, examples/* or models/tianchi/README.md that speaks of the
  default ("the default", "bundled default") quotes another: each "dev F1 X", "(dev X)" or "X +- Y" in
  it is the recorded figure (X rounded to as many decimals as it is written with).
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT, PD, TE = sys.argv[1:4]
FIG = json.load(open(os.path.join(ROOT, "models", "tianchi", "figures.json"), encoding="utf-8"))
DEV, MEAN, SE = FIG["dev"]["f1"], FIG["folds"]["mean"], FIG["folds"]["se"]
failed = []


def check(what, ok, detail=""):
    print(("ok    " if ok else "FAIL  ") + what + ("" if ok else f"  {detail}"))
    if not ok:
        failed.append(what)


# the record is true
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "Result.csv")
    subprocess.run([PD, "extract", "--model", os.path.join(ROOT, "models", "tianchi"), "--schema",
                    os.path.join(ROOT, "schemas", "tianchi-makeup.yaml"), "--input",
                    os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv"), "--output", out, "--threads", "2"],
                   check=True, capture_output=True, timeout=300)
    got = json.loads(subprocess.run([TE, os.path.join(ROOT, "data", "tianchi", "dev_labels.csv"), out, "--json"],
                                    check=True, capture_output=True, timeout=120).stdout)
overall, pairs = got["overall"], got["pairs"]
for name, want, have in (("F1", DEV, overall["f1"]), ("precision", FIG["dev"]["precision"], overall["precision"]),
                         ("recall", FIG["dev"]["recall"], overall["recall"]), ("pairs F1", FIG["dev"]["pairs_f1"], pairs["f1"])):
    check(f"figures.json: dev {name} {want} is what the bundled default scores", round(have, 4) == want, have)

# the places that quote them
fold_text = f"{MEAN:.4f} +- {SE:.4f}"
for rel in ("README.md", "docs/extraction-by-decisions.md", "models/tianchi/README.md"):
    text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
    check(f"{rel} quotes the default's dev F1 {DEV:.4f} and folds {fold_text}",
          f"{DEV:.4f}" in text and fold_text in text)

# no other figure called the default's
DEFAULT = re.compile(r"\b(the|bundled) default\b(?!s)", re.I)
QUOTES = [(re.compile(r"dev F1 (0\.\d+)"), "dev"), (re.compile(r"\(dev (0\.\d+)"), "dev"),
          (re.compile(r"(0\.\d+) \+- (0\.\d+)"), "folds")]


def sentences(text):
    """Sentences of a file's paragraphs, a C comment's leaders and Markdown line breaks joined."""
    text = re.sub(r"\n\s*\*\s?", " ", text)
    for para in re.split(r"\n\s*\n", text):
        yield from re.split(r"(?<=[.;:])\s+(?=[A-Z(])|。", " ".join(para.split()))


def same(written, value):
    decimals = len(written.split(".")[1])
    return float(written) == round(value, decimals)


files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "models", "tianchi", "README.md")]
files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
files += sorted(p for p in glob.glob(os.path.join(ROOT, "examples", "**", "*"), recursive=True)
                if p.endswith((".c", ".py", ".md", ".sh")))
wrong = []
for path in files:
    with open(path, encoding="utf-8") as f:
        for s in sentences(f.read()):
            if not DEFAULT.search(s):
                continue
            for rx, kind in QUOTES:
                for m in rx.finditer(s):
                    ok = same(m.group(1), DEV) if kind == "dev" else same(m.group(1), MEAN) and same(m.group(2), SE)
                    if not ok:
                        wrong.append(f"{os.path.relpath(path, ROOT)}: {m.group(0)!r} in {s[:160]!r}")
check(f"no sentence about the default quotes other figures ({len(files)} files)", not wrong, "\n      ".join(wrong))
print(f"{len(failed)} failed" if failed else "all figures agree")
sys.exit(1 if failed else 0)
