"""`pip install` as a Python user does it: the source tree built into a wheel by
pyproject.toml (meson-python, no build isolation, no package index) in a fresh venv, the
wheel under 5 MB with both libraries inside, then from /tmp, with no PYTHONPATH and no
POCKETDEC_LIBRARY, the installed package extracts with the bundled default what the
build's `pocketdec extract --format jsonl` writes, and summarizes those records (no command on PATH) as
`pocketdec summarize` does.

    check_wheel.py SOURCE_ROOT POCKETDEC_COMMAND

Exits 77 (a skip to meson) without python3-mesonpy or a venv module that makes venvs."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

MAX_WHEEL = 5 * 1024 * 1024
REVIEWS = ["物流很快，第二天就到了，包装也很好，就是味道有点重", "垃圾", "用了一周，皮肤水水嫩嫩的，很保湿"]
# run by the venv's python from /tmp: the records as `extract --format jsonl` prints them (%.4g)
CHILD = r"""
import json, sys, pocketdec
from pocketdec import _lib
venv, model, schema = sys.argv[1:4]
assert pocketdec.__file__.startswith(venv), pocketdec.__file__
assert pocketdec.library_path.startswith(venv), pocketdec.library_path
assert _lib.te()._name.startswith(venv), _lib.te()._name
def one(r):
    r = r.as_json()
    r["probs"] = {f: float(f"{p:.4g}") for f, p in r["probs"].items()}
    r["confidence"] = float(f"{r['confidence']:.4g}")
    return r
with pocketdec.Model(model, threads=1) as m, pocketdec.Extractor(m, schema) as ex:
    print(json.dumps([[one(r) for r in ex.extract(t)] for t in json.loads(sys.stdin.read())]))
"""


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def run(*args, **kwargs):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if p.returncode:
        sys.exit(f"{' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p.stdout


def main():
    src, command = sys.argv[1:3]
    if importlib.util.find_spec("mesonpy") is None:
        skip(f"{sys.executable} has no mesonpy (apt-get install python3-mesonpy)")
    model, schema = os.path.join(src, "models", "tianchi"), os.path.join(src, "schemas", "tianchi-makeup.yaml")
    # the user's environment, less what points python at this build
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "POCKETDEC_LIBRARY", "POCKETDEC_TIANCHI_EVAL_LIBRARY", "LD_LIBRARY_PATH")}
    with tempfile.TemporaryDirectory(prefix="pocketdec-wheel-") as tmp:
        venv = os.path.join(tmp, "venv")
        p = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True, text=True)
        if p.returncode:  # Debian's python3 without python3-venv
            skip(f"{sys.executable} -m venv failed (apt-get install python3-venv): {p.stdout}{p.stderr}".strip())
        # a copy, so the build writes nothing into the checkout; the models are read where they are
        tree = os.path.join(tmp, "src")
        shutil.copytree(src, tree, symlinks=True, ignore=lambda d, names: [
            n for n in names if d == src and (n in (".git", "models", "data") or n.startswith(("build", ".mesonpy")))])
        pip = [os.path.join(venv, "bin", "pip"), "--disable-pip-version-check"]
        run(*pip, "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", os.path.join(tmp, "wheel"), tree,
            cwd=tmp, env=env)
        [wheel] = os.listdir(os.path.join(tmp, "wheel"))
        wheel = os.path.join(tmp, "wheel", wheel)
        size = os.path.getsize(wheel)
        print(f"{os.path.basename(wheel)}: {size} bytes")
        assert size < MAX_WHEEL, f"the wheel is {size} bytes, over {MAX_WHEEL}"
        run(*pip, "install", "--no-deps", "--no-index", wheel, cwd=tmp, env=env)

        reviews = os.path.join(tmp, "in.jsonl")
        with open(reviews, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(REVIEWS))
        out = os.path.join(tmp, "out.jsonl")
        run(command, "extract", "--model", model, "--schema", schema, "--threads", "1", "--input", reviews,
            "--output", out, "--format", "jsonl")
        with open(out, encoding="utf-8") as f:
            want = [json.loads(line)["records"] for line in f]
        got = json.loads(run(os.path.join(venv, "bin", "python"), "-c", CHILD, venv, model, schema,
                             input=json.dumps(REVIEWS), cwd="/tmp", env=env))
        assert got == want, f"the installed package extracted\n{got}\nthe command\n{want}"
        assert sum(map(len, want)) >= len(REVIEWS), want  # the bundled model does extract
        print(f"the installed package extracts {sum(map(len, got))} records as the command does")
        # pocketdec.summarize by the installed library, no pocketdec command on PATH
        want = json.loads(run(command, "summarize", "--records", out, "--model", model))
        summary = ("import json, sys, pocketdec\n"
                   "print(json.dumps(pocketdec.summarize(sys.argv[1], model=sys.argv[2])['json']))\n")
        got = json.loads(run(os.path.join(venv, "bin", "python"), "-c", summary, out, model, cwd="/tmp",
                             env={**env, "PATH": "/usr/bin:/bin"}))
        assert got == want, f"the installed package summarized\n{got}\nthe command\n{want}"
        print(f"the installed package summarizes {want['reviews']} reviews as the command does")


if __name__ == "__main__":
    main()
