#!/usr/bin/python3
"""Does a new adapter pay for its time? teach.py's --adapter keep, warm and retrain, on the folds.

  measure_teach_adapter.py --out DIR [--folds 0 1 2] [--new 500] [--threads 2] [--epochs 0] [--seed 0]
                           [--retrain-from KDIR] [--base models/tianchi/base] [--data PATH... --schema YAML]
  measure_teach_adapter.py --out DIR --summary [--folds 0 1 2]

For each fold k of kfold.py's folds (its seeded split into 5 of the labelled reviews outside dev): the
held-out part H_k; the training part T_k, split by a seeded shuffle (--seed) into S_k, all but --new of
them (the labels a bundle was trained on), and N_k, --new reviews (the new labels a user brings). Five
arms, each scored on H_k through pocketdec as kfold.py scores (F1; the F1 of the schema's negative
label's records alone, simulate_teach.py's figure):

  seed     the label stage (adapter and head over --base, kfold.py's default options: the bundled
           default's recipe) trained on S_k, written as a bundle teach.py takes (base/, adapter/,
           head/, train_log.json);
  keep     teach.py --bundle SEED_k --labels N_k.jsonl --original S_k.jsonl --original-dev-fraction 0
           --adapter keep: the seed's trunk kept, the head retrained on S_k + N_k;
  warm     the same with --adapter warm: the seed's adapter trained on, with a new head, for teach.py's
           epochs of warm (2);
  retrain  the same with --adapter retrain: a new adapter and head on S_k + N_k, for teach.py's epochs
           of retrain (3);
  full     a new adapter and head for the recipe's epochs (5): teach.py --adapter retrain --epochs 5.
           With --retrain-from KDIR it is not trained: kfold.py's own model of the fold (KDIR/fold<k>/:
           adapter and head trained on all of T_k over the same base, the same recipe; checked against
           KDIR/kfold.json) is scored instead, and its training time is kfold.py's (no CPU time).

--epochs N (not 0) trains every arm N epochs. Every arm's figures, training wall time and CPU time (the
process's, from getrusage: every thread) are saved as DIR/fold<k>/<arm>.json as soon as they are known;
a rerun loads them and trains only what is missing. --summary prints each arm's mean +- SE over the
folds, the paired differences (PAIRS) fold by fold, and a decision for each trained adapter (warm,
retrain, full): it pays when its difference over keep is above its standard error on the mean F1 and
positive on every fold (two folds at least); otherwise keep.
"""

import argparse
import json
import os
import random
import resource
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dataset as DS  # noqa: E402
import simulate_teach as ST  # noqa: E402

ARMS = ("seed", "keep", "warm", "retrain", "full")
TRAINED = ("warm", "retrain", "full")  # the arms that train an adapter, each decided against keep
PAIRS = (("keep", "seed"), ("warm", "keep"), ("retrain", "keep"), ("full", "keep"), ("retrain", "warm"),
         ("full", "retrain"))
KFOLDS = 5  # kfold.py's default: the folds of its runs that --retrain-from reads


def cpu_seconds():
    """CPU time of this process (every thread) and its children so far."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                    resource.getrusage(resource.RUSAGE_CHILDREN)))


def load_arm(d, arm):
    return DS.read_saved(os.path.join(d, f"{arm}.json"))


def save_arm(d, arm, s):
    DS.write_saved(os.path.join(d, f"{arm}.json"), s, ensure_ascii=False, indent=2)


class Fold:
    """One fold's parts (S_k, N_k and H_k), written for teach.py, and its arms."""

    def __init__(self, a, k, parts, reviews, sc):
        self.a, self.k, self.sc, self.schema = a, k, sc, sc.data.schema
        self.dir = os.path.join(a.out, f"fold{k}")
        os.makedirs(self.dir, exist_ok=True)
        held = set(parts[k])
        rest = [r for r in reviews if r.id not in held]
        if not 0 < a.new < len(rest):
            raise SystemExit(f"measure_teach_adapter.py: --new {a.new}: fold {k}'s training part has {len(rest)} "
                             "reviews; --new must leave some for S_k")
        order = list(range(len(rest)))
        random.Random(a.seed * 1000 + k).shuffle(order)
        new = set(order[:a.new])
        self.S = [r for j, r in enumerate(rest) if j not in new]
        self.N = [r for j, r in enumerate(rest) if j in new]
        self.H = [(r.id, r.text) for r in reviews if r.id in held]
        self.s_path, self.n_path = os.path.join(self.dir, "S.jsonl"), os.path.join(self.dir, "N.jsonl")
        DS.write_jsonl(self.s_path, self.schema, self.S)
        DS.write_jsonl(self.n_path, self.schema, self.N)
        self.gold = os.path.join(self.dir, "gold.csv")
        sc.write_gold(self.gold, parts[k])
        self.neg = ST.negative(self.schema)

    def score(self, arm, base, adapter, head, record):
        """arm's figures on H_k through pocketdec, with record (its training time), saved."""
        import kfold
        t0 = time.time()
        result = os.path.join(self.dir, f"{arm}_Result.csv")
        s = kfold.score_model(self.sc, base, adapter, head, self.H, result, self.gold, self.a.threads)
        gold = {str(i): self.sc.gold[str(i)] for i, _ in self.H}
        fig = ST.figures(gold, DS.read_result_rows(result), self.neg)
        out = {"fold": self.k, "arm": arm, "f1": s["overall"]["f1"], "neg_f1": fig["neg_f1"],
               "negative": "/".join(sorted({v for vs in self.neg.values() for v in vs})), "overall": s["overall"],
               "negative_counts": {x: fig[x] for x in ("neg_S", "neg_P", "neg_G")},
               "reviews": {"S": len(self.S), "N": len(self.N), "H": len(self.H)},
               "score_seconds": round(time.time() - t0, 1), **record}
        save_arm(self.dir, arm, out)
        ST.log(f"fold {self.k} {arm}: F1 {out['f1']:.4f}, {out['negative']} F1 {out['neg_f1']:.4f} "
               f"(training {out['train_seconds']} s wall, {out['train_cpu_seconds']} s CPU)")
        return out

    def bundle(self, arm):
        return os.path.join(self.dir, arm)

    def train_seed(self):
        """The label stage on S_k over --base, written as a bundle (renamed into place when whole)."""
        import teach
        a = teach.recipe_args(self.dir, ["--threads", str(self.a.threads), "--seed", str(self.a.seed)])
        if self.a.epochs:
            a.epochs = self.a.epochs
        tmp = self.bundle("seed") + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.a.base, os.path.join(tmp, "base"))
        record = {}
        teach.train_stage(a, self.a.base, self.schema, [(r.id, r.text, list(r.records)) for r in self.S], record,
                          tmp, f"fold{self.k} seed")
        with open(os.path.join(tmp, "train_log.json"), "w", encoding="utf-8") as f:
            json.dump({"args": {x: getattr(a, x) for x in teach.RECIPE}, "label": record[f"fold{self.k} seed"]}, f,
                      indent=2)
        shutil.rmtree(self.bundle("seed"), ignore_errors=True)
        os.replace(tmp, self.bundle("seed"))

    def train_teach(self, arm):
        import teach
        epochs = self.a.epochs or (teach.recipe_args(self.dir).epochs if arm == "full" else 0)
        teach.teach(self.bundle("seed"), [self.n_path], self.bundle(arm), original=self.s_path,
                    adapter="retrain" if arm == "full" else arm, schema_path=self.schema.path,
                    threads=self.a.threads, epochs=epochs, seed=self.a.seed, log=ST.log, original_dev=0)

    def run(self, arm):
        got = load_arm(self.dir, arm)
        if got is not None:
            ST.log(f"fold {self.k} {arm}: saved ({os.path.join(self.dir, arm + '.json')}), not trained again")
            return got
        if arm == "full" and self.a.retrain_from:
            return self.from_kfold()
        ST.log(f"fold {self.k} {arm}: training ({len(self.S)} reviews S, {len(self.N)} N)")
        t0, c0 = time.time(), cpu_seconds()
        if arm == "seed":
            self.train_seed()
        else:
            self.train_teach(arm)
        record = {"train_seconds": round(time.time() - t0, 1), "train_cpu_seconds": round(cpu_seconds() - c0, 1),
                  "from": "trained"}
        b = self.bundle(arm)
        return self.score(arm, os.path.join(b, "base"), os.path.join(b, "adapter"), os.path.join(b, "head"), record)

    def from_kfold(self):
        """kfold.py's model of this fold (trained on all of T_k) as the full arm."""
        d = os.path.join(self.a.retrain_from, f"fold{self.k}")
        with open(os.path.join(d, "score.json"), encoding="utf-8") as f:
            done = json.load(f)
        record = {"train_seconds": done.get("seconds"), "train_cpu_seconds": None, "from": d}
        return self.score("full", self.a.base, os.path.join(d, "adapter"), os.path.join(d, "head"), record)


def check_kfold(a):
    """--retrain-from: KDIR's run must be kfold.py's folds over this base with the full arm's recipe."""
    import teach
    path = os.path.join(a.retrain_from, "kfold.json")
    try:
        with open(path, encoding="utf-8") as f:
            was = json.load(f)["args"]
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"measure_teach_adapter.py: --retrain-from: {path}: {e}; it is written when kfold.py "
                         "has run every fold") from None
    want = teach.recipe_args(a.out, ["--seed", str(a.seed)])
    if a.epochs:
        want.epochs = a.epochs
    bad = [f"{x} {was.get(x)!r} (the full arm's: {getattr(want, x)!r})" for x in teach.RECIPE + ("seed",)
           if was.get(x) != getattr(want, x)]
    if was.get("folds") != KFOLDS or was.get("fold_seed") != a.fold_seed or was.get("limit"):
        bad.append(f"folds {was.get('folds')}, fold seed {was.get('fold_seed')}, limit {was.get('limit')} "
                   f"(these folds: {KFOLDS}, {a.fold_seed}, 0)")
    if os.path.realpath(str(was.get("base"))) != os.path.realpath(a.base):
        bad.append(f"base {was.get('base')} (here {a.base})")
    if bad:
        raise SystemExit(f"measure_teach_adapter.py: --retrain-from {a.retrain_from} is not this recipe: "
                         + "; ".join(bad))


def summarise(a, out=print):
    """Each arm's mean +- SE, the paired differences, the decision; returns them as a dict."""
    runs = {arm: {} for arm in ARMS}
    for k in a.folds:
        for arm in ARMS:
            s = load_arm(os.path.join(a.out, f"fold{k}"), arm)
            if s is not None:
                runs[arm][k] = s
    neg = next((s["negative"] for r in runs.values() for s in r.values()), "负面")
    res = {"arms": {}, "differences": {}}

    def fig(v):
        m, se = DS.mean_se(v, float("nan"))
        return {"mean": m, "se": se, "folds": v}

    def secs(v):
        v = [x for x in v if x is not None]
        return f"{sum(v) / len(v):.0f} s" if v else "-"

    for arm in ARMS:
        r = runs[arm]
        if not r:
            out(f"{arm:8s} no fold saved")
            continue
        ks = sorted(r)
        row = {"folds": ks, "f1": fig([r[k]["f1"] for k in ks]), "neg_f1": fig([r[k]["neg_f1"] for k in ks]),
               "train_seconds": [r[k]["train_seconds"] for k in ks],
               "train_cpu_seconds": [r[k]["train_cpu_seconds"] for k in ks]}
        res["arms"][arm] = row
        out(f"{arm:8s} folds {','.join(map(str, ks))}: F1 {row['f1']['mean']:.4f} +- {row['f1']['se']:.4f}, "
            f"{neg} F1 {row['neg_f1']['mean']:.4f} +- {row['neg_f1']['se']:.4f}; training a fold "
            f"{secs(row['train_seconds'])} wall, {secs(row['train_cpu_seconds'])} CPU")
    for hi, lo in PAIRS:
        ks = sorted(set(runs[hi]) & set(runs[lo]))
        if not ks:
            continue
        d = {x: [runs[hi][k][x] - runs[lo][k][x] for k in ks] for x in ("f1", "neg_f1")}
        t = [runs[hi][k]["train_seconds"] - runs[lo][k]["train_seconds"] for k in ks
             if runs[hi][k]["train_seconds"] is not None and runs[lo][k]["train_seconds"] is not None]
        row = {"folds": ks, "f1": fig(d["f1"]), "neg_f1": fig(d["neg_f1"]), "train_seconds": t}
        res["differences"][f"{hi}-{lo}"] = row
        out(f"{hi} - {lo}: F1 {', '.join(f'{x:+.4f}' for x in d['f1'])} ({row['f1']['mean']:+.4f} +- "
            f"{row['f1']['se']:.4f}); {neg} F1 {', '.join(f'{x:+.4f}' for x in d['neg_f1'])} "
            f"({row['neg_f1']['mean']:+.4f} +- {row['neg_f1']['se']:.4f}); training time "
            f"{', '.join(f'{x:+.0f} s' for x in t) or '-'} (folds {','.join(map(str, ks))})")
    res["decisions"] = {arm: decide(res["differences"].get(f"{arm}-keep"), arm) for arm in TRAINED}
    res["decision"] = res["decisions"]["retrain"]
    for d in res["decisions"].values():
        out(d["line"])
    return res


def decide(diff, arm="retrain"):
    """arm (a trained adapter) when arm - keep's mean F1 is above its SE and every fold's is positive (2
    folds or more); otherwise keep."""
    if diff is None or len(diff["folds"]) < 2:
        return {"adapter": None, "line": f"decision: none yet ({arm} - keep needs two folds or more)"}
    f = diff["f1"]
    pays = f["mean"] > f["se"] and all(x > 0 for x in f["folds"])
    t = diff["train_seconds"]
    cost = f"; it costs {sum(t) / len(t):+.0f} s of training a fold" if t else ""
    why = (f"{arm} - keep F1 {f['mean']:+.4f} +- {f['se']:.4f} over {len(f['folds'])} folds, "
           f"{sum(x > 0 for x in f['folds'])} of them positive{cost}")
    return {"adapter": arm if pays else "keep",
            "line": f"decision: {f'{arm} (the trained adapter pays)' if pays else f'keep ({arm} does not pay)'}: "
                    f"{why}"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", required=True)
    ap.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2], help="which of kfold.py's 5 folds")
    ap.add_argument("--new", type=int, default=500, help="N_k: the new labelled reviews of each fold")
    ap.add_argument("--base", default=os.path.join(os.path.dirname(HERE), "models", "tianchi", "base"),
                    help="a base pre-trained without labels (the bundled default's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=0,
                    help="every arm's epochs; 0: the recipe's (5) for seed, keep and full, teach.py's for warm and "
                         "retrain")
    ap.add_argument("--seed", type=int, default=0, help="the S_k / N_k split and the training")
    ap.add_argument("--fold-seed", type=int, default=20261204, help="kfold.py's")
    ap.add_argument("--retrain-from", metavar="KDIR", help="kfold.py's run of these folds: its fold models are "
                    "the full arm (trained on all of T_k), not trained here")
    ap.add_argument("--summary", action="store_true", help="sum up the arms saved; train nothing")
    DS.add_args(ap)
    a = ap.parse_args(argv)
    if a.summary:
        return summarise(a)
    bad = [k for k in a.folds if not 0 <= k < KFOLDS]
    if bad:
        raise SystemExit(f"measure_teach_adapter.py: --folds {bad[0]}: kfold.py's folds are 0 to {KFOLDS - 1}")
    try:
        import torch
    except ImportError:
        raise SystemExit("measure_teach_adapter.py: PyTorch is needed (Debian: apt-get install python3-torch)")
    import evaluate
    import kfold
    torch.set_num_threads(a.threads)
    if a.retrain_from:
        check_kfold(a)
    try:
        data = DS.load(a)
    except DS.DataError as e:
        raise SystemExit(f"measure_teach_adapter.py: {e}") from None
    reviews = [r for r in data.train if r.labelled()]  # data.labelled("train"), as Review objects
    parts = kfold.folds([r.id for r in reviews], KFOLDS, a.fold_seed)
    sc = kfold.Scorer(evaluate.package(), data)
    for k in a.folds:
        fold = Fold(a, k, parts, reviews, sc)
        for arm in ARMS:
            fold.run(arm)
    return summarise(a)


if __name__ == "__main__":
    main()
