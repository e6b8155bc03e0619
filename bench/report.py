#!/usr/bin/python3
"""Tables of bench/run.sh (pocketdec vs llama.cpp). Standard library only.

  report.py collect FMT DIR         one JSON line from DIR/{pd.json,pd.rss,ll.json,ll.rss,ll_load.json}
  report.py table RESULTS.jsonl     the throughput table (medians over rounds)
  report.py decision PD.json LL.json
  report.py interop TYPE PD_LOGITS.json LL_LOGITS.json
  report.py extract MODEL PD.jsonl [LL.jsonl]   batch extraction rows (bench_extract_many, llama_score --batched)
  report.py rounds MODEL PD.jsonl   sequential against N = 8 with speculation, round by round (PD_BENCH_ROUNDS)
  report.py draft THREADS PD.jsonl [LL.jsonl [Q4.jsonl]]   a draft's parts (bench_draft_cost, llama_score
                                    --verify: the best of all their lines) and the speed-up they predict
"""
import json
import os
import statistics
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rss_mb(path):
    """/usr/bin/time -f %M writes the peak RSS in KiB on its last line."""
    with open(path) as f:
        return int(f.read().split()[-1]) / 1024.0


def collect(fmt, d):
    pd = load(os.path.join(d, "pd.json"))
    ll = load(os.path.join(d, "ll.json"))
    if isinstance(ll, dict):  # llama_score --bench
        ll_prefill, ll_decode = ll["prefill_tokens_per_s"], ll["decode_tokens_per_s"]
    else:  # llama-bench -o json: one object per test, samples_ts per repetition
        pp = next(t for t in ll if t["n_prompt"] > 0 and t["n_gen"] == 0)
        tg = next(t for t in ll if t["n_gen"] > 0 and t["n_prompt"] == 0)
        ll_prefill, ll_decode = statistics.median(pp["samples_ts"]), statistics.median(tg["samples_ts"])
    row = {
        "format": fmt,
        "pd_prefill": pd["prefill_tokens_per_s"], "pd_decode": pd["decode_tokens_per_s"],
        "pd_load_ms": pd["load_s"] * 1e3, "pd_rss_mb": rss_mb(os.path.join(d, "pd.rss")),
        "pd_own_rss_mb": pd["peak_rss_mb"],
        "ll_prefill": ll_prefill, "ll_decode": ll_decode,
        "ll_load_ms": load(os.path.join(d, "ll_load.json"))["load_ms"],
        "ll_rss_mb": rss_mb(os.path.join(d, "ll.rss")),
    }
    print(json.dumps(row))


# formats whose llama.cpp side runs another file (bench/run.sh)
LABELS = {"q4_64": "Q4_64 (llama.cpp: Q4_0)"}


def table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    formats = list(dict.fromkeys(r["format"] for r in rows))
    print("| format | prefill 512 tok/s pd / llama | ratio | decode 128 tok/s pd / llama | ratio "
          "| peak RSS MB pd / llama | load ms pd / llama |")
    print("|---|---|---|---|---|---|---|")
    for fmt in formats:
        rs = [r for r in rows if r["format"] == fmt]
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0] if isinstance(rs[0][k], (int, float))}
        print(f"| {LABELS.get(fmt, fmt.upper())} | {m['pd_prefill']:.1f} / {m['ll_prefill']:.1f} | "
              f"**{m['pd_prefill'] / m['ll_prefill']:.2f}x** | {m['pd_decode']:.1f} / {m['ll_decode']:.1f} | "
              f"**{m['pd_decode'] / m['ll_decode']:.2f}x** | {m['pd_rss_mb']:.0f} / {m['ll_rss_mb']:.0f} | "
              f"{m['pd_load_ms']:.0f} / {m['ll_load_ms']:.0f} |")
    print("\nratio = pocketdec / llama.cpp (above 1: pocketdec faster). Peak RSS: /usr/bin/time of each whole "
          "process (model mmapped, 640-token context).")


def decision(pd_path, ll_path):
    b = load(pd_path)["bench"]
    ll = load(ll_path)
    dec, pre = b["decision_ms"], b["prefill_ms"]
    print("| measure (best of %d) | ms | vs pocketdec decision |" % b["reps"])
    print("|---|---|---|")
    print(f"| pocketdec: one decision, 13 candidates in one pass ({b['prompt_tokens']} tokens) | {dec:.1f} | 1.00x |")
    print(f"| pocketdec: prefill of the same prompt alone | {pre:.1f} | {pre / dec:.2f}x |")
    print(f"| llama.cpp: 13 sequences one after another ({ll['tokens']} tokens) | {ll['serial_ms']:.1f} | "
          f"{ll['serial_ms'] / dec:.2f}x |")
    print(f"| llama.cpp: 13 sequences in one batch, one seq id each | {ll['batch_ms']:.1f} | "
          f"{ll['batch_ms'] / dec:.2f}x |")
    print(f"\ndecision / prefill = {dec / pre:.3f} (goal: at most 1.1); llama.cpp / pocketdec = "
          f"{ll['serial_ms'] / dec:.2f}x serial, {ll['batch_ms'] / dec:.2f}x batched")


def interop(ty, pd_path, ll_path):
    a, b = load(pd_path), load(ll_path)
    if len(a) != len(b):
        print(f"| {ty} | yes, but {len(b)} logits vs {len(a)} | | |")
        return
    scale = max(abs(x) for x in a)
    diff = max(abs(x - y) for x, y in zip(a, b)) / scale
    top = max(range(len(a)), key=a.__getitem__) == max(range(len(b)), key=b.__getitem__)
    print(f"| {ty} | yes | {diff:.2e} | {'yes' if top else 'no'} |")


def extract(model, pd_path, ll_path=None):
    """One table row per configuration; llama.cpp's batched decode at the same N beside the rows with N in flight."""
    with open(pd_path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ll = {}
    if ll_path and os.path.exists(ll_path):
        with open(ll_path, encoding="utf-8") as f:
            ll = {r["sequences"]: r["batched_decode_tokens_per_s"] for r in map(json.loads, f) if r}
    for r in rows:
        n = r["in_flight"]
        if r["config"] == "batched decode":  # the engine alone, as llama_score --batched
            peer = ll.get(n)
            ratio = f"{r['gen_tok_s'] / peer:.2f}x" if peer else ""
            print(f"| {model} | batched decode, no schema | {n} | | | {r['gen_tok_s']:.1f} | | | "
                  f"| {f'{peer:.1f}' if peer else ''} | {ratio} |")
            continue
        peer = ll.get(n if n else 1)
        ratio = f"{r['gen_tok_s'] / peer:.2f}x" if peer else ""
        print(f"| {model} | {r['config']} | {n or ''} | {r['speculate'] or ''} | {r['reviews_s']:.2f} | {r['gen_tok_s']:.1f} "
              f"| {r['speedup']:.2f}x | {r['peak_rss_mb']:.0f} | {'yes' if r['same_records'] else 'NO'} "
              f"| {f'{peer:.1f}' if peer else ''} | {ratio} |")


def rounds(model, pd_path):
    """PD_BENCH_ROUNDS: each round's sequential and N = 8 with speculation, their ratio, then the passes alone
    (joint passes of the rows N = 8 evaluated a pass, no schema): the reviews/s they allow at the rows a review
    took, over sequential's (the ratio the passes allow, whatever the decoding around them); the medians."""
    with open(pd_path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ratios, allowed = [], []
    for seq, many, passes in zip(rows[0::3], rows[1::3], rows[2::3]):
        rows_review = many["rows"] / many["reviews"]
        allow = passes["rows_s"] / rows_review / seq["reviews_s"]
        ratios.append(many["speedup"])
        allowed.append(allow)
        same = "yes" if seq["same_records"] and many["same_records"] else "NO"
        print(f"| {model} | {seq['round']} | {seq['reviews_s']:.2f} | {many['reviews_s']:.2f} | {many['gen_tok_s']:.1f} "
              f"| {many['speedup']:.2f}x | {same} | {rows_review:.1f} | {passes['rows_per_pass']} | {passes['rows_s']:.0f} "
              f"| {allow:.2f}x |")
    if ratios:
        print(f"| {model} | median of {len(ratios)} | | | | {statistics.median(ratios):.2f}x | | | | "
              f"| {statistics.median(allowed):.2f}x |")


# Tokens a verifying pass measured with models/tianchi-gen's trained draft (docs/drafts.md).
ACCEPTANCE = [(3.92, "schema, draft + copy speculation"), (4.34, "schema, draft alone"),
              (4.59, "free greedy generation")]


def interpolate(points, x):
    """Piecewise-linear y(x) through sorted (x, y) points, the end segments extended."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1 or (x1, y1) == points[-1]:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[0][1]


def draft(threads, pd_path, ll_path=None, *variants):
    """pd_path: bench_draft_cost on the target and its draft as loaded (the file's BF16); ll_path:
    llama_score --verify; variants: LABEL=PATH, bench_draft_cost with the draft quantized at load
    (its draft passes are the drafter of a column of their own)."""
    best = {}
    sources = [(pd_path, "pd"), (ll_path, "ll")] + [(v.split("=", 1)[1], v.split("=", 1)[0]) for v in variants]
    for path, tool in sources:
        for line in open(path) if path and path != "-" else ():
            r = json.loads(line)
            key = {"target pass": lambda: (tool, r["layer_states"], r["full_logits"], r["rows"]),
                   "llama.cpp pass": lambda: (tool, False, True, r["rows"]),
                   "draft append": lambda: (tool + " append", r["positions"]),
                   "draft pass": lambda: (tool + " draft", r["block"])}[r["case"]]()
            best[key] = min(r["us"], best.get(key, float("inf")))
    labels = [v.split("=", 1)[0] for v in variants]
    sizes = sorted(k[3] for k in best if k[:3] == ("pd", False, True))
    blocks = [b for b in (8, 16) if ("pd draft", b) in best and b in sizes]
    appends = sorted((k[1], v) for k, v in best.items() if k[0] == "pd append" and k[1] <= 16)
    plain, ll1 = best[("pd", False, True, 1)], best.get(("ll", False, True, 1))
    sparse1 = best[("pd", False, False, 1)]
    ms = lambda us: f"{us / 1e3:.2f}"  # noqa: E731
    print(f"Passes, {threads} thread(s), ms (in one-token passes of the same program and logits)\n")
    print("| rows | pocketdec, full logits | + layer states (verify) | 8 logits a row + layer states (extraction) "
          "| llama.cpp, full logits |")
    print("|---|---|---|---|---|")
    for n in sizes:
        cells = [(("pd", False, True, n), plain), (("pd", True, True, n), plain), (("pd", True, False, n), sparse1),
                 (("ll", False, True, n), ll1)]
        print(f"| {n} | " + " | ".join(f"{ms(best[k])} ({best[k] / one:.2f})" if k in best else "-"
                                      for k, one in cells) + " |")
    for tool, what in [("pd", "as stored (BF16)")] + [(lab, f"quantized at load ({lab})") for lab in labels]:
        print(f"\nDraft (DFlash2, {what}): pass of a block of " + ", ".join(
            f"{b}: {ms(best[(tool + ' draft', b)])} ms ({best[(tool + ' draft', b)] / plain:.2f} one-token passes)"
            for b in sorted(k[1] for k in best if k[0] == tool + " draft")) + ".")
    print("Append in one call of " + ", ".join(
        f"{p} position{'s' if p > 1 else ''}: {ms(us)} ms" for p, us in appends) + ".\n")
    # a verifying cycle: a draft pass, a target pass of the block's rows, an append of the tokens kept;
    # columns: (title, verify pass key, one-token pass, draft pass key or None)
    columns = [("pocketdec generation (full logits), the draft as stored", ("pd", True, True), plain, "pd draft")]
    columns += [(f"the draft {lab}", ("pd", True, True), plain, lab + " draft") for lab in labels]
    columns += [("the draft free", ("pd", True, True), plain, None),
                ("pocketdec extraction (8 logits a row), the draft as stored", ("pd", True, False), sparse1, "pd draft")]
    if ll1:
        columns.append(("llama.cpp's passes, pocketdec's draft as stored", ("ll", False, True), ll1, "pd draft"))

    def cycle(verify, b, a, drafter):
        d = best[(drafter, b)] if drafter else 0
        return d + best[verify + (b,)] + interpolate(appends, a)

    print("Predicted speed-up over one-token decoding = tokens a pass x one-token pass / (draft pass + "
          "verify pass of the block's rows + append of the tokens kept)\n")
    print("| block | tokens a pass | " + " | ".join(c[0] for c in columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for b in blocks:
        for a, what in ACCEPTANCE:
            cells = [f"{a * one / cycle(key, b, a, d):.2f}x" for _, key, one, d in columns]
            print(f"| {b} | {a} ({what}) | " + " | ".join(cells) + " |")
        even = []
        for _, key, one, d in columns:
            a = 1.0
            for _ in range(20):  # a = cycle(a) / one pass; the append's share makes it a fixed point
                a = cycle(key, b, a, d) / one
            even.append(f"{a:.2f}" + (" (more than the block holds)" if a > b else ""))
        print(f"| {b} | break-even | " + " | ".join(even) + " |")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"collect": collect, "table": table, "decision": decision, "interop": interop, "extract": extract,
     "rounds": rounds, "draft": draft}[cmd](*args)
