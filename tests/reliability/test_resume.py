#!/usr/bin/python3
"""Nothing lost when `pocketdec extract` dies (docs/reliability.md), on the bundled default and the
test split: one run killed with SIGKILL at seeded random moments and resumed each time (CSV in,
Tianchi rows out; JSONL in, JSONL out, two reviews side by side), a kill inside the progress file's
own update (strace's syscall fault injection at its rename when strace can trace, else the state
such a kill leaves), a torn last line, a full disk (a small tmpfs in a mount namespace of the test's
own when root, else a file-size limit): after each, the output holds whole reviews only, a prefix
of an uninterrupted run's, and `--resume` finishes it byte for byte; a resume of another run is
refused naming what differs.

Usage: test_resume.py POCKETDEC SOURCE_ROOT
Prints "N passed, N failed" and exits non-zero on failure. POCKETDEC_SANITIZED set: fewer reviews
and kills (a sanitized build runs several times slower).
"""
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

PD, ROOT = sys.argv[1:3]
MODEL = os.path.join(ROOT, "models", "tianchi")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
TEST = os.path.join(ROOT, "data", "tianchi", "test_reviews.csv")
SANITIZED = bool(os.environ.get("POCKETDEC_SANITIZED"))
REVIEWS = 250 if SANITIZED else None  # None: the whole test split (2,237 reviews)
KILLS = 5 if SANITIZED else 20
SEED = 55
RESULTS = []


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:800]), flush=True)


def args(src, out, *extra):
    return [PD, "extract", "--model", MODEL, "--schema", SCHEMA, "--input", src, "--output", out, "--threads", "2",
            *extra]


def run(src, out, *extra, **kw):
    return subprocess.run(args(src, out, *extra), capture_output=True, timeout=600, **kw)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def progress(out):
    """The progress file's fields (bytes, state, complete)."""
    fields = {}
    for line in read(out + ".progress").decode().split("\n"):
        if line == "run":
            break
        key, _, value = line.partition(" ")
        fields[key] = value
    return fields


def whole_prefix(name, out, ref):
    """After a crash: the progress names a prefix of whole lines of the uninterrupted output."""
    data, p = read(out), progress(out)
    n = int(p["bytes"])
    ok = n <= len(data) and data[:n] == ref[:n] and (n == 0 or data[n - 1:n] == b"\n")
    check(name, ok, f"progress bytes {n}, output {len(data)} bytes")
    return n


def inputs(tmp):
    """The test split as CSV and as JSONL (REVIEWS of it under a sanitizer)."""
    csv_path, jsonl_path = os.path.join(tmp, "reviews.csv"), os.path.join(tmp, "reviews.jsonl")
    with open(TEST, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    rows = lines[: (REVIEWS + 1) if REVIEWS else None]
    with open(csv_path, "w", encoding="utf-8") as f:
        f.writelines(rows)
    with open(jsonl_path, "w", encoding="utf-8") as f:
        for line in rows[1:]:
            rid, _, text = line.rstrip("\r\n").partition(",")
            f.write(json.dumps({"id": int(rid), "text": text}, ensure_ascii=False) + "\n")
    return csv_path, jsonl_path


def kill_and_resume(name, src, out, ref, extra, rng):
    """KILLS SIGKILLs at random moments after the output grew, each run a resume of the last."""
    kills, size, t0 = 0, 0, time.time()
    for k in range(KILLS):
        p = subprocess.Popen(args(src, out, *extra, *(["--resume"] if k else [])), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        while p.poll() is None and (not os.path.exists(out) or os.path.getsize(out) <= size):
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.15 if not SANITIZED else 0.6))
        if p.poll() is None:
            p.kill()
            kills += 1
        p.wait()
        size = whole_prefix(f"{name}: after kill {k + 1}, the output is whole reviews of the run's", out, ref)
        if k == KILLS // 2:  # a torn last line, as a kill in the middle of a long review's write leaves
            with open(out, "ab") as f:
                f.write(ref[len(read(out)):][:7] or b"9999,torn")
    check(f"{name}: {KILLS} kills landed while the run was writing", kills == KILLS, f"{kills} of {KILLS}")
    r = run(src, out, *extra, "--resume")
    check(f"{name}: the last resume finishes, exit 0", r.returncode == 0, r.stderr.decode()[-400:])
    check(f"{name}: the resumed output is byte for byte the uninterrupted run's", read(out) == ref,
          f"{len(read(out))} bytes against {len(ref)}")
    check(f"{name}: the progress says complete", progress(out).get("complete") == "yes")
    print(f"      {name}: {KILLS} kills and resumes in {time.time() - t0:.1f} s", flush=True)


def strace_can_trace():
    if not shutil.which("strace"):
        return False
    r = subprocess.run(["strace", "-o", "/dev/null", "true"], capture_output=True)
    return r.returncode == 0


def kill_in_progress_update(tmp, src, ref):
    """A kill inside the progress file's update: its new copy written, not yet renamed over it."""
    out = os.path.join(tmp, "in-update.csv")
    if strace_can_trace():
        how = "strace injects SIGKILL at the progress file's 4th rename"
        subprocess.run(["strace", "-f", "-o", "/dev/null", "-e", "trace=rename",
                        "-e", "inject=rename:signal=KILL:when=4", *args(src, out)], capture_output=True, timeout=600)
    else:  # the state such a kill leaves, made by hand: a run killed, a half-written new progress copy
        how = "the state a kill there leaves (strace cannot trace here)"
        p = subprocess.Popen(args(src, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and (not os.path.exists(out) or os.path.getsize(out) < 2000):
            time.sleep(0.005)
        p.kill()
        p.wait()
        with open(out + ".progress.tmp", "wb") as f:
            f.write(read(out + ".progress")[:40])
    check(f"killed during the progress update ({how}): its new copy left behind",
          os.path.exists(out + ".progress.tmp"))
    whole_prefix("killed during the progress update: the progress still names whole reviews", out, ref)
    r = run(src, out, "--resume")
    check("killed during the progress update: resumed, byte for byte the uninterrupted run's",
          r.returncode == 0 and read(out) == ref and not os.path.exists(out + ".progress.tmp"), r.stderr.decode()[-400:])


def full_disk(tmp, src, ref):
    """The disk fills: exit 1, a clear message, whole reviews only; a resume once there is room."""
    out = os.path.join(tmp, "full.jsonl")
    room = len(ref) // 3
    if os.geteuid() == 0 and shutil.which("unshare"):
        how = f"a tmpfs of {room // 1024} KiB"
        disk = os.path.join(tmp, "disk")
        os.mkdir(disk)
        # the tmpfs lives as long as the namespace: the run, then the files copied out, then room made, the resume
        script = ('set -u; mount -t tmpfs -o size=$1 tmpfs "$2" || exit 90; shift 2; out=$1; shift; '
                  '"$@" --output "$out/full.jsonl" 2>"$0/err1"; echo $? >"$0/rc1"; '
                  'cp "$out/full.jsonl" "$out/full.jsonl.progress" "$0"; '
                  'mount -o remount,size=64m "$out" && "$@" --output "$out/full.jsonl" --resume 2>"$0/err2"; '
                  'echo $? >"$0/rc2"; cp "$out/full.jsonl" "$0/resumed.jsonl"')
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, tmp, str(room), disk, disk,
               *args(src, "-")[:-4], "--format", "jsonl"]
        r = subprocess.run(cmd, capture_output=True, timeout=600)
        usable = r.returncode != 90 and os.path.exists(os.path.join(tmp, "rc1"))
    else:
        usable = False
    if usable:
        rc1 = int(read(os.path.join(tmp, "rc1")))
        err1 = read(os.path.join(tmp, "err1")).decode()
        # the script copied the output and its progress as the full disk left them to out
        resumed = read(os.path.join(tmp, "resumed.jsonl"))
        rc2 = int(read(os.path.join(tmp, "rc2")))
    else:  # not root, or no mount namespace: a file-size limit stands in for the disk
        how = f"a file-size limit of {room} bytes"

        def limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (room, room))

        r = run(src, out, "--format", "jsonl", preexec_fn=limit)
        rc1, err1 = r.returncode, r.stderr.decode()
        shutil.copy(out, out + ".kept")
        shutil.copy(out + ".progress", out + ".kept.progress")
        r2 = run(src, out, "--format", "jsonl", "--resume")
        rc2, resumed = r2.returncode, read(out)
        shutil.move(out + ".kept", out)
        shutil.move(out + ".kept.progress", out + ".progress")
    check(f"disk full ({how}): exit 1 with a message naming the output and the cause",
          rc1 == 1 and re.search(r"full\.jsonl(\.progress)?: cannot write: (No space left on device|File too large)", err1), err1[-400:])
    data = read(out)
    check(f"disk full ({how}): the output is whole reviews of the run's, no torn line",
          0 < len(data) <= room and ref.startswith(data) and data.endswith(b"\n"), f"{len(data)} bytes")
    whole_prefix(f"disk full ({how}): the progress names it", out, ref)
    check(f"disk full ({how}): resumed once there is room, byte for byte the uninterrupted run's",
          rc2 == 0 and resumed == ref, f"rc {rc2}, {len(resumed)} bytes against {len(ref)}")


def refusals(tmp, src, ref):
    out = os.path.join(tmp, "refused.csv")
    run(src, out)
    before = read(out)
    r = run(src, out, "--resume", "--min-confidence", "0.5")
    check("a resume with another option is refused, naming it (exit 1, the output untouched)",
          r.returncode == 1 and "min-confidence: was none, now '0.5'" in r.stderr.decode() and read(out) == before,
          r.stderr.decode())
    changed = os.path.join(tmp, "changed.csv")
    data = read(src)
    with open(changed, "wb") as f:
        f.write(data[:-3] + b"X" + data[-2:])
    shutil.copy(changed, src + ".orig")
    r = subprocess.run(args(changed, out, "--resume"), capture_output=True, timeout=600)
    check("a resume over another input is refused, naming it", r.returncode == 1 and "input: was '" in r.stderr.decode(),
          r.stderr.decode())
    r = run(src, out, "--resume", "--threads", "1", "--progress", "0")
    check("--threads and --progress may change on a resume", r.returncode == 0 and read(out) == ref, r.stderr.decode()[-300:])
    r = run(src, "-", "--resume")
    check("--resume to stdout is a usage error (exit 2)", r.returncode == 2 and "--resume" in r.stderr.decode())
    r = subprocess.run([PD, "extract", "--help"], capture_output=True)
    text = r.stdout.decode() + r.stderr.decode()
    check("--help says an output is replaced unless --resume", "is replaced, unless --resume" in text, text[-600:])


def main():
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        csv_path, jsonl_path = inputs(tmp)
        ref_csv, ref_jsonl = os.path.join(tmp, "ref.csv"), os.path.join(tmp, "ref.jsonl")
        r1 = run(csv_path, ref_csv)
        r2 = run(jsonl_path, ref_jsonl, "--format", "jsonl", "--parallel", "2")
        check("the uninterrupted runs", r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr)
        ref_c, ref_j = read(ref_csv), read(ref_jsonl)
        kill_and_resume("CSV", csv_path, os.path.join(tmp, "killed.csv"), ref_c, [], rng)
        kill_and_resume("JSONL", jsonl_path, os.path.join(tmp, "killed.jsonl"), ref_j,
                        ["--format", "jsonl", "--parallel", "2"], rng)
        kill_in_progress_update(tmp, csv_path, ref_c)
        full_disk(tmp, jsonl_path, ref_j)
        refusals(tmp, csv_path, ref_c)
    print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
