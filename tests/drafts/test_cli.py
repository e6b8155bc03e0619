#!/usr/bin/python3
"""`pocketdec generate --draft DIR [--draft-block N]`: the text of plain greedy generation, the summary
line on stderr, and the usage and load errors.

Usage: test_cli.py POCKETDEC FIXTURES   (the folder tests/drafts/make_fixtures.py wrote)
"""
import json
import os
import re
import subprocess
import sys

exe, fixtures = sys.argv[1], sys.argv[2]
gen = json.load(open(os.path.join(fixtures, "generate.json")))
failures = []


def run(*args):
    return subprocess.run([exe, "generate", "--model", gen["target"], "--threads", "2", *args],
                          capture_output=True, text=True)


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


summary = re.compile(r"pocketdec: (\d+) tokens in (\d+) passes; (\d+) drafted, (\d+) accepted")
for draft in gen["drafts"]:
    for prompt in gen["prompts"]:
        for extra, block in (([], []), ([], ["--draft-block", "3"]), (["--chat", "--max-tokens", "9"], [])):
            plain = run("--prompt", prompt, "--max-tokens", "24", *extra)
            spec = run("--prompt", prompt, "--max-tokens", "24", "--draft", draft, *block, *extra)
            what = f"{os.path.basename(draft)} {prompt!r} {extra + block}"
            check(what, plain.returncode == 0 and spec.returncode == 0, plain.stderr + spec.stderr)
            check(what, plain.stdout == spec.stdout, f"{spec.stdout!r} against {plain.stdout!r}")
            m = summary.search(spec.stderr)
            check(what, m is not None, f"no summary line in {spec.stderr!r}")
            if m:
                tokens, passes, drafted, accepted = map(int, m.groups())
                check(what, 0 < passes <= tokens and accepted <= drafted, m.group(0))

# sampling: the draft's blocks verified by the target's samples, the text of the same seed without it
sample = ["--max-tokens", "24", "--temperature", "0.8", "--top-k", "20", "--seed", "7"]
for draft in gen["drafts"]:
    for prompt in gen["prompts"]:
        plain = run("--prompt", prompt, *sample)
        spec = run("--prompt", prompt, "--draft", draft, *sample)
        what = f"sampling, {os.path.basename(draft)} {prompt!r}"
        check(what, plain.returncode == 0 and spec.returncode == 0, plain.stderr + spec.stderr)
        check(what, plain.stdout == spec.stdout, f"{spec.stdout!r} against {plain.stdout!r}")
        m = summary.search(spec.stderr)
        check(what, m is not None and int(m.group(3)) > 0, f"no drafts in {spec.stderr!r}")
        check(what, re.search(r"pocketdec: \d+ tokens in [0-9.]+ s; [0-9.]+ tokens/s", plain.stderr) is not None,
              f"no summary line without a draft: {plain.stderr!r}")

# a draft quantized at load: other proposals, the same text
for draft in gen["drafts"]:
    for q in ("q8_0", "q4_0"):
        plain = run("--prompt", gen["prompts"][0], "--max-tokens", "24")
        spec = run("--prompt", gen["prompts"][0], "--max-tokens", "24", "--draft", draft, "--draft-quantize", q)
        what = f"--draft-quantize {q}, {os.path.basename(draft)}"
        check(what, plain.returncode == 0 and spec.returncode == 0 and plain.stdout == spec.stdout,
              f"{spec.stdout!r} against {plain.stdout!r}: {spec.stderr}")
        check(what, summary.search(spec.stderr) is not None, spec.stderr)
bad = run("--prompt", "a", "--draft-quantize", "q8_0")
check("--draft-quantize without --draft", bad.returncode == 2 and "needs --draft" in bad.stderr, bad.stderr)
bad = run("--prompt", "a", "--draft", gen["drafts"][0], "--draft-quantize", "q4_1")
check("--draft-quantize q4_1", bad.returncode == 2 and "must be none, q8_0 or q4_0" in bad.stderr, bad.stderr)
bad = run("--prompt", "a", "--draft", gen["unquantizable"], "--draft-quantize", "q8_0")
check("a draft that cannot be quantized", bad.returncode == 1 and "not whole blocks of 32" in bad.stderr, bad.stderr)

bad = run("--prompt", "a", "--draft-block", "3")
check("--draft-block without --draft", bad.returncode == 2 and "--draft-block needs --draft" in bad.stderr, bad.stderr)
bad = run("--prompt", "a", "--draft", gen["drafts"][0], "--draft-block", "99")
check("--draft-block past the block", bad.returncode == 1 and "at most" in bad.stderr, bad.stderr)
bad = run("--prompt", "a", "--draft", os.path.join(fixtures, "broken", "hidden"))
check("a draft of another width", bad.returncode == 1 and "hidden size 32" in bad.stderr, bad.stderr)

for f in failures:
    print("FAIL", f)
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
