#!/usr/bin/python3
"""`pocketdec rank` on the bundled default (models/tianchi) and 30 dev reviews, each ordering checked
against something computed apart from it: confidence against the records `extract --format jsonl`
writes for the same reviews (1 - the lowest confidence, 1 for none); entropy against the bound
of five tags' entropy (log 5); complaint against a hand-picked complaint and praise review; random against itself (the same seed, the same draws, each id
once) and another seed. Without --order: complaint for a tagger head with a negative label, confidence for
a tagger head without one (the bundled head and schema with 负面 renamed) and for another head. Usage errors exit 2; an ordering the head cannot give exits 1, saying why.

Usage: test_rank.py POCKETDEC SOURCE_ROOT
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

PD, ROOT = sys.argv[1:3]
M = os.path.join(ROOT, "models", "tianchi")
GEN = os.path.join(ROOT, "models", "tianchi-gen")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
DEV = os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv")
RESULTS = []


def run(*args):
    p = subprocess.run([PD, *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:600]))


def rank(path, order, *more, model=M, schema=SCHEMA):
    rc, out, err = run("rank", "--model", model, "--schema", schema, "--input", path,
                       *(["--order", order] if order else []), "--threads", "1", *more)
    return rc, [json.loads(x) for x in out.splitlines()] if rc == 0 else [], err


def main():
    tmp = tempfile.mkdtemp(prefix="pd-rank-")
    path = os.path.join(tmp, "dev.csv")
    with open(DEV, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        out.write("".join(line for _, line in zip(range(31), f)))
    with open(path, encoding="utf-8") as f:
        texts = {ln.split(",", 1)[0]: ln.rstrip("\n").split(",", 1)[1] for ln in list(f)[1:]}
    ids = list(texts)

    rc, got, err = rank(path, "confidence")
    jl = os.path.join(tmp, "x.jsonl")
    rc2, _, err2 = run("extract", "--model", M, "--schema", SCHEMA, "--input", path, "--output", jl,
                       "--format", "jsonl", "--threads", "1")
    want = {}
    with open(jl, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            want[str(r["id"])] = 1 - min((x["confidence"] for x in r["records"]), default=0)  # written to 4 places
    check("confidence: every id once", rc == 0 and rc2 == 0 and sorted(x["id"] for x in got) == sorted(ids), err + err2)
    check("confidence: 1 - the lowest record confidence extract writes",
          all(abs(x["score"] - want[x["id"]]) <= 5.1e-5 for x in got), [(x, want.get(x["id"])) for x in got][:5])
    check("confidence: most useful first", [x["score"] for x in got] == sorted((x["score"] for x in got), reverse=True))

    rc, got, err = rank(path, "entropy")
    check("entropy: every id once, scores within [0, log 5]", rc == 0 and sorted(x["id"] for x in got) == sorted(ids)
          and all(0 <= x["score"] <= math.log(5) + 1e-9 for x in got), err)
    check("entropy: most useful first", [x["score"] for x in got] == sorted((x["score"] for x in got), reverse=True))

    rc, got, err = rank(path, "complaint")
    pos = {x["id"]: k for k, x in enumerate(got)}
    check("complaint: scores are probabilities", rc == 0 and all(0 <= x["score"] <= 1 for x in got), err)
    # id 4 is a complaint (产品非常的不好，简直就是个垃圾), id 35 pure praise (不错媳妇用着挺好的)
    check("complaint: the complaint before the praise", pos.get("4", 99) < pos.get("35", -1), got)

    a = rank(path, "random", "--seed", "7")
    b = rank(path, "random", "--seed", "7")
    c = rank(path, "random", "--seed", "8")
    check("random: the same seed, the same order", a[0] == 0 and a[1] == b[1], a[2])
    check("random: each id once, scores in [0, 1)", sorted(x["id"] for x in a[1]) == sorted(ids)
          and all(0 <= x["score"] < 1 for x in a[1]))
    check("random: another seed, another order", [x["id"] for x in a[1]] != [x["id"] for x in c[1]])
    out = os.path.join(tmp, "ranked.jsonl")
    rc, _, err = run("rank", "--model", M, "--schema", SCHEMA, "--input", path, "--order", "random", "--seed", "7",
                     "--output", out)
    with open(out, encoding="utf-8") as f:
        check("--output FILE holds what stdout would", rc == 0 and [json.loads(x) for x in f] == a[1], err)

    default, complaint = rank(path, None), rank(path, "complaint")
    check("no --order: complaint for a tagger head with a negative label", default[0] == 0 and
          default[1] == complaint[1], default[2])
    # the same head and schema with 负面 renamed 不好: no complaint label, so confidence, and complaint refused
    head, schema = os.path.join(tmp, "head-no-negative"), os.path.join(tmp, "no-negative.yaml")
    shutil.copytree(os.path.join(M, "head"), head)
    for name in os.listdir(head):
        if not name.endswith(".safetensors"):
            with open(os.path.join(head, name), encoding="utf-8") as f:
                text = f.read()
            with open(os.path.join(head, name), "w", encoding="utf-8") as f:
                f.write(text.replace("负面", "不好"))
    with open(SCHEMA, encoding="utf-8") as f, open(schema, "w", encoding="utf-8") as out:
        out.write(f.read().replace("负面", "不好"))
    renamed = lambda order: rank(path, order, "--head", head, schema=schema)  # noqa: E731
    default, confidence, refused = renamed(None), renamed("confidence"), renamed("complaint")
    check("no --order: confidence for a tagger head without a negative label",
          default[0] == 0 and default[1] == confidence[1] and default[1], default[2])
    check("complaint without a negative label exits 1, naming the values", refused[0] == 1 and "负面" in refused[2],
          refused[2])
    few = os.path.join(tmp, "few.csv")  # generation is slower: 5 reviews
    with open(DEV, encoding="utf-8") as f, open(few, "w", encoding="utf-8") as out:
        out.write("".join(line for _, line in zip(range(6), f)))
    default, confidence = rank(few, None, model=GEN), rank(few, "confidence", model=GEN)
    check("no --order: confidence for another head", default[0] == 0 and default[1] == confidence[1], default[2])

    rc, _, err = rank(path, "loudest")
    check("an unknown ordering is a usage error naming the four", rc == 2 and "confidence, entropy, complaint or random" in err, err)
    rc, _, err = rank(path, "entropy", model=GEN)
    check("entropy without a tagger head exits 1, saying so", rc == 1 and "tagger head" in err, err)
    bad = os.path.join(tmp, "dup.jsonl")
    with open(bad, "w", encoding="utf-8") as f:
        f.write('{"id": 1, "text": "好"}\n{"id": 2, "text": "差"}\n{"id": 1, "text": "还行"}\n')
    rc, _, err = rank(bad, "random")
    check("a repeated id is refused with its line", rc == 1 and "dup.jsonl:3" in err and "id 1" in err, err)

    print("%d passed, %d failed" % (RESULTS.count(True), RESULTS.count(False)))
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
