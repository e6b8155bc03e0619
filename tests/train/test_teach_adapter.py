#!/usr/bin/python3
"""train/measure_teach_adapter.py: teach.py's kept adapter against a new one on the folds, run by meson.

  test_teach_adapter.py SOURCE_ROOT

Without torch (or under a sanitizer: the arms are scored by the pocketdec library loaded into python3)
the torch-free checks run and the test exits 77 (meson: skipped). Checks:
  - the summary and the decision against hand-made arms: mean +- SE and paired differences as counted
    by hand; retrain only when retrain - keep is above its SE and positive on every fold; one fold
    decides nothing;
  - a tiny run (40 Tianchi reviews as JSONL, folds 0 and 1, --new 6, one epoch): the three arms'
    files with F1 in [0, 1] and the F1 of overall scoring equal to the figures' (one metric); keep's
    teach_log.json trained on S_k (the original, no dev split) and N_k; keep's adapter is the seed's
    byte for byte and its head is not; retrain's adapter is new; the summary's decision line; a rerun
    trains nothing (every arm reported saved, the files untouched).
"""

import contextlib
import filecmp
import io
import json
import math
import os
import sys
import tempfile

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "train"))
import dataset as DS  # noqa: E402
import measure_teach_adapter as M  # noqa: E402

SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")


def arm(d, k, name, f1, neg, secs):
    os.makedirs(os.path.join(d, f"fold{k}"), exist_ok=True)
    M.save_arm(os.path.join(d, f"fold{k}"), name, {"fold": k, "arm": name, "f1": f1, "neg_f1": neg,
                                                    "negative": "负面", "train_seconds": secs,
                                                    "train_cpu_seconds": secs})


def summary(d, folds):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        res = M.main(["--out", d, "--summary", "--folds"] + [str(k) for k in folds])
    return res, text.getvalue()


def check_decision(tmp):
    d = os.path.join(tmp, "hand")
    # retrain - keep F1: +0.02, +0.01, +0.03: mean 0.02, SE sqrt(((0)^2 + 0.01^2 + 0.01^2) / 2 / 3) = 0.00577
    for k, (s, kp, rt) in enumerate([(0.60, 0.62, 0.64), (0.50, 0.53, 0.54), (0.70, 0.70, 0.73)]):
        arm(d, k, "seed", s, 0.2, 100)
        arm(d, k, "keep", kp, 0.3, 40)
        arm(d, k, "retrain", rt, 0.25, 160)
    res, text = summary(d, [0, 1, 2])
    rk = res["differences"]["retrain-keep"]
    assert [round(x, 6) for x in rk["f1"]["folds"]] == [0.02, 0.01, 0.03], rk
    assert math.isclose(rk["f1"]["mean"], 0.02) and math.isclose(rk["f1"]["se"], math.sqrt(0.0002 / 6)), rk
    assert rk["train_seconds"] == [120, 120, 120], rk
    ks = res["differences"]["keep-seed"]
    assert math.isclose(ks["f1"]["mean"], (0.02 + 0.03 + 0.0) / 3) and math.isclose(ks["neg_f1"]["mean"], 0.1), ks
    assert math.isclose(res["arms"]["seed"]["f1"]["mean"], 0.6), res["arms"]["seed"]
    assert res["decision"]["adapter"] == "retrain", res["decision"]
    assert "decision: retrain" in text and "+0.0200 +- 0.0058" in text and "+120 s" in text, text
    # one fold negative (+0.02, +0.01, -0.01): keep
    arm(d, 2, "retrain", 0.69, 0.25, 160)
    res, text = summary(d, [0, 1, 2])
    assert res["decision"]["adapter"] == "keep" and "decision: keep" in text and "2 of them positive" in text, text
    # +0.0001, +0.0001, +0.03: mean 0.010067 above its SE 0.009967 (every fold positive): retrain
    arm(d, 0, "retrain", 0.6201, 0.25, 160)
    arm(d, 1, "retrain", 0.5301, 0.25, 160)
    arm(d, 2, "retrain", 0.73, 0.25, 160)
    rk = summary(d, [0, 1, 2])[0]
    assert math.isclose(rk["differences"]["retrain-keep"]["f1"]["se"], 0.0099667, rel_tol=1e-4), rk["differences"]
    assert rk["decision"]["adapter"] == "retrain", rk["decision"]
    arm(d, 0, "retrain", 0.62, 0.25, 160)  # a fold at exactly 0 is not positive: keep
    assert summary(d, [0, 1, 2])[0]["decision"]["adapter"] == "keep"
    res, text = summary(d, [0])
    assert res["decision"]["adapter"] is None and "decision: none yet" in text, text
    # warm's own decision over keep (keep F1 0.62, 0.53, 0.70): +0.01, +0.02, +0.015 pays; then one fold below
    assert summary(d, [0, 1, 2])[0]["decisions"]["warm"]["adapter"] is None  # no warm arm yet
    for k, w in enumerate([0.63, 0.55, 0.715]):
        arm(d, k, "warm", w, 0.3, 90)
    res, text = summary(d, [0, 1, 2])
    wk = res["differences"]["warm-keep"]
    assert [round(x, 6) for x in wk["f1"]["folds"]] == [0.01, 0.02, 0.015] and wk["train_seconds"] == [50] * 3, wk
    assert res["decisions"]["warm"]["adapter"] == "warm" and "decision: warm" in text, text
    assert [round(x, 6) for x in res["differences"]["retrain-warm"]["f1"]["folds"]] == [-0.01, -0.0199, 0.015]
    arm(d, 2, "warm", 0.695, 0.3, 90)
    res, text = summary(d, [0, 1, 2])
    assert res["decisions"]["warm"]["adapter"] == "keep" and "keep (warm does not pay)" in text, text
    print("ok: the summary and the decision, against hand-made arms")


def check_warm_starts_from_seed(tmp, d):
    """teach.py --adapter warm at a learning rate of 0 for the trunk writes the seed's adapter as it was
    (the adapter is trained on from where it stands, not from zero), and --adapter retrain at 0 writes a
    new one (B still zero)."""
    import shutil
    import teach
    import qwen3
    seed = os.path.join(tmp, "seed-lr0")
    shutil.rmtree(seed, ignore_errors=True)
    shutil.copytree(os.path.join(d, "seed"), seed)
    log_path = os.path.join(seed, "train_log.json")
    with open(log_path, encoding="utf-8") as f:
        log = json.load(f)
    log["args"]["lora_lr"] = 0.0
    with open(log_path, "w", encoding="utf-8") as f:
        json.dump(log, f)
    # the epochs of each when none are asked: a new adapter 3, a continued one 2, a kept trunk's head the bundle's
    for adapter, epochs in (("retrain", 3), ("warm", 2), ("keep", log["args"]["epochs"])):
        assert teach.train_args(seed, os.path.join(tmp, "run"), adapter, 1, 0, 0).epochs == epochs, adapter
    was = qwen3.read_safetensors(os.path.join(seed, "adapter", "adapter_model.safetensors"))
    for arm in ("warm", "retrain"):
        out = os.path.join(tmp, f"{arm}-lr0")
        teach.teach(seed, [os.path.join(d, "N.jsonl")], out, original=os.path.join(d, "S.jsonl"), adapter=arm,
                    schema_path=SCHEMA, threads=1, epochs=1, log=lambda *x: None, original_dev=0)
        got = qwen3.read_safetensors(os.path.join(out, "adapter", "adapter_model.safetensors"))
        assert sorted(got) == sorted(was), (arm, sorted(got)[:3])
        same = all((got[k] == was[k]).all() for k in was)
        b_zero = all(not got[k].any() for k in got if k.endswith("lora_B.weight"))
        assert same if arm == "warm" else (not same and b_zero), arm


def check_run(tmp):
    data = os.path.join(tmp, "reviews.jsonl")
    schema = DS.Schema(SCHEMA)
    reviews = DS.read([os.path.join(ROOT, "data", "tianchi")], schema, DS.Report(True))[:40]
    DS.write_jsonl(data, schema, reviews)
    by_id = {r.id: r for r in reviews if r.labelled()}
    assert len(by_id) == 40
    import kfold
    held = kfold.folds(list(by_id), 5)  # kfold.py's folds of the 40: the held-out parts
    out = os.path.join(tmp, "run")
    args = ["--out", out, "--data", data, "--schema", SCHEMA, "--folds", "0", "1", "--new", "6", "--epochs", "1",
            "--threads", "1", "--dev-fraction", "0"]
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        res = M.main(args)
    mtimes = {}
    for k in (0, 1):
        d = os.path.join(out, f"fold{k}")
        n_new = sum(1 for _ in open(os.path.join(d, "N.jsonl"), encoding="utf-8"))
        n_orig = sum(1 for _ in open(os.path.join(d, "S.jsonl"), encoding="utf-8"))
        assert n_new == 6 and n_orig == 32 - 6, (n_new, n_orig)  # 40 reviews, 8 held out a fold
        for name in M.ARMS:
            with open(os.path.join(d, f"{name}.json"), encoding="utf-8") as f:
                s = json.load(f)
            assert 0 <= s["f1"] <= 1 and 0 <= s["neg_f1"] <= 1 and s["negative"] == "负面", s
            assert s["reviews"] == {"S": 26, "N": 6, "H": 8} and s["train_cpu_seconds"] > 0, s
            # scored on the held-out fold's records, every row the arm's extraction wrote
            with open(os.path.join(d, f"{name}_Result.csv"), encoding="utf-8") as f:
                rows = [line.rstrip("\n").split(",") for line in f]
            assert {r[0] for r in rows} == {str(i) for i in held[k]}, rows
            assert s["overall"]["predicted"] == sum(1 for r in rows if r[1:] != ["_"] * 4), (s["overall"], rows)
            assert s["overall"]["gold"] == sum(len(by_id[i].records) for i in held[k]), s["overall"]
            assert s["negative_counts"]["neg_G"] == sum(q[-1] == "负面" for i in held[k] for q in by_id[i].records)
            mtimes[k, name] = os.stat(os.path.join(d, f"{name}.json")).st_mtime_ns
        with open(os.path.join(d, "keep", "teach_log.json"), encoding="utf-8") as f:
            taught = json.load(f)
        assert taught["adapter"] == "keep" and taught["reviews"]["original"] == 26, taught["reviews"]
        assert taught["reviews"]["new"] + taught["reviews"]["original"] - taught["reviews"]["replaced"] == \
            taught["reviews"]["trained"], taught["reviews"]
        adapter = os.path.join("adapter", "adapter_model.safetensors")
        head = os.path.join("head", "head.safetensors")
        assert filecmp.cmp(os.path.join(d, "seed", adapter), os.path.join(d, "keep", adapter), shallow=False)
        assert not filecmp.cmp(os.path.join(d, "seed", head), os.path.join(d, "keep", head), shallow=False)
        assert not filecmp.cmp(os.path.join(d, "seed", adapter), os.path.join(d, "retrain", adapter), shallow=False)
        assert not filecmp.cmp(os.path.join(d, "keep", head), os.path.join(d, "retrain", head), shallow=False)
        with open(os.path.join(d, "warm", "teach_log.json"), encoding="utf-8") as f:
            warm = json.load(f)
        assert warm["adapter"] == "warm" and warm["epochs"] == 1 and warm["reviews"] == taught["reviews"], warm
        assert not filecmp.cmp(os.path.join(d, "seed", adapter), os.path.join(d, "warm", adapter), shallow=False)
        assert not filecmp.cmp(os.path.join(d, "keep", head), os.path.join(d, "warm", head), shallow=False)
        check_warm_starts_from_seed(tmp, d)
    assert res["decision"]["line"] in log.getvalue() and res["decision"]["adapter"] in ("keep", "retrain"), res
    for pair in ("keep - seed", "warm - keep", "retrain - keep", "full - keep", "retrain - warm", "full - retrain"):
        assert f"{pair}: F1" in log.getvalue(), (pair, log.getvalue())
    assert res["decisions"]["warm"]["line"] in log.getvalue(), res["decisions"]
    # a rerun loads every arm: nothing trained, nothing written again
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        M.main(args)
    for k in (0, 1):
        for name in M.ARMS:
            assert f"fold {k} {name}: saved" in log.getvalue(), log.getvalue()
            assert os.stat(os.path.join(out, f"fold{k}", f"{name}.json")).st_mtime_ns == mtimes[k, name]
    assert "training (" not in log.getvalue(), log.getvalue()
    print(f"ok: a tiny run of five arms on two folds, and a rerun that trains nothing ({res['decision']['line']})")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_decision(tmp)
        try:
            import torch  # noqa: F401
        except ImportError:
            print("SKIP: python3-torch is not installed; the measurement did not run")
            sys.exit(77)
        if os.environ.get("POCKETDEC_SANITIZED"):
            print("SKIP: the arms are scored by the pocketdec library in python3, which cannot load a sanitized one")
            sys.exit(77)
        check_run(tmp)


if __name__ == "__main__":
    main()
