"""examples/python: each runs as its docstring says, and extract_csv.py writes exactly the
submission `pocketdec extract` writes; so does train/evaluate.py, which scores through the package."""

import os
import re
import subprocess
import sys

import helpers
from helpers import DATA, ROOT, SCHEMA, TIANCHI, run

EXAMPLES = os.path.join(ROOT, "examples", "python")


def example(name, *args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *map(str, args)], cwd=cwd, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def head(path, n, out):
    """out: the header and first n lines of the CSV at path (one review a line in the dev split)."""
    with open(path, encoding="utf-8") as f:
        out.write_text("".join(f.readlines()[:n + 1]), encoding="utf-8")
    return out


def test_score_labels():
    out = example("score_labels.py", "物流很快，第二天就到了，包装也很好", "物流", "很快").splitlines()
    assert len(out) == 5 and out[0].startswith("物流/正面\t0.99")


def test_extract_csv_writes_what_the_command_writes(tmp_path):
    reviews, gold = os.path.join(DATA, "dev_reviews.csv"), os.path.join(DATA, "dev_labels.csv")
    if helpers.DEV_LIMIT:
        reviews = head(reviews, helpers.DEV_LIMIT, tmp_path / "reviews.csv")
    out = example("extract_csv.py", reviews, tmp_path / "py.csv", gold)
    run(helpers.POCKETDEC, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", reviews,
        "--output", tmp_path / "cli.csv")
    assert (tmp_path / "py.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    f1 = float(re.search(r"'f1': ([0-9.]+)", out).group(1))
    if not helpers.DEV_LIMIT:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            said = float(re.search(r"dev F1 ([0-9.]+)", f.read()).group(1))  # the quick start's figure
        assert round(f1, 4) == said, f"dev F1 {f1}, the README says {said}"


def test_train_evaluate_scores_what_the_command_extracts(tmp_path):
    gen = helpers.TIANCHI_GEN
    out = example(os.path.join(ROOT, "train", "evaluate.py"), "--model", os.path.join(gen, "base"), "--adapter",
                  os.path.join(gen, "adapter"), "--head", os.path.join(gen, "head"), "--out", tmp_path,
                  "--limit", "5", cwd=os.path.join(ROOT, "train"))
    reviews = head(os.path.join(DATA, "dev_reviews.csv"), 5, tmp_path / "reviews.csv")
    for name, options in (("gen", ["--model", os.path.join(gen, "base"), "--adapter", os.path.join(gen, "adapter")]),
                          ("head", ["--model", gen])):
        run(helpers.POCKETDEC, "extract", *options, "--schema", SCHEMA, "--input", reviews,
            "--output", tmp_path / f"cli_{name}.csv")
        assert (tmp_path / f"dev_Result_{name}.csv").read_bytes() == (tmp_path / f"cli_{name}.csv").read_bytes()
    assert out.count("F1 ") == 2
