"""What the Python tests share: the build's libraries and commands, the fixtures, and
running the commands. Imported before pocketdec, it points the package at this build."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("POCKETDEC_BUILD_DIR") or os.path.join(ROOT, "build")
os.environ.setdefault("POCKETDEC_LIBRARY", os.path.join(BUILD, "libpocketdec.so"))
os.environ.setdefault("POCKETDEC_TIANCHI_EVAL_LIBRARY", os.path.join(BUILD, "tianchi-eval", "libtianchieval.so"))
sys.path.insert(0, os.path.join(ROOT, "python"))

POCKETDEC = os.path.join(BUILD, "cli", "pocketdec")
TIANCHI_EVAL = os.path.join(BUILD, "tianchi-eval", "tianchi-eval")
SANITIZED = os.environ.get("POCKETDEC_SANITIZED", "")
TIANCHI = os.path.join(ROOT, "models", "tianchi")          # tagger head (extraction by decisions)
TIANCHI_GEN = os.path.join(ROOT, "models", "tianchi-gen")  # pointer head (generation, decisions)
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
DATA = os.path.join(ROOT, "data", "tianchi")
MODEL_FIXTURES = os.path.join(BUILD, "tests", "model", "fixtures")
HEAD_FIXTURES = os.path.join(BUILD, "tests", "heads", "fixtures")
SCHEMA_FIXTURES = os.path.join(BUILD, "tests", "schemas", "fixtures")
REVIEW = "物流很快，第二天就到了，包装也很好，就是味道有点重"


def run(*args, stdin=None, ok=(0,)):
    """stdout of a command (str); an AssertionError with its stderr when it fails."""
    p = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True)
    assert p.returncode in ok, f"{' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr}"
    return p.stdout


def cli_json(*args, stdin=None):
    return json.loads(run(POCKETDEC, *args, stdin=stdin))


def error_of(fn, *args, **kwargs):
    """The pocketdec.Error that fn(*args, **kwargs) raises."""
    import pytest
    import pocketdec
    with pytest.raises(pocketdec.Error) as e:
        fn(*args, **kwargs)
    return e.value


# Under the sanitizers, which make the same run several times slower: the dev split's first
# 60 reviews where the plain build compares all 283.
DEV_LIMIT = 60 if SANITIZED else None


def dev_reviews(limit=None):
    """[(id, text)] of the dev split, read as the command reads its CSV."""
    import csv
    with open(os.path.join(DATA, "dev_reviews.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:]
    return [(int(i), t) for i, t in rows][:limit]


def as_jsonl(records):
    """Python records as `pocketdec extract --format jsonl` prints them: probabilities to 4
    significant digits (the command's %.4g)."""
    def one(r):
        r = r.as_json()
        r["probs"] = {f: float(f"{p:.4g}") for f, p in r["probs"].items()}
        r["confidence"] = float(f"{r['confidence']:.4g}")
        return r
    return [one(r) for r in records]
