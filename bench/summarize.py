#!/usr/bin/python3
"""The cost of `pocketdec summarize` on records already extracted, and its memory against the corpus's size.

  bench/summarize.py POCKETDEC RECORDS.jsonl [N ...]

RECORDS.jsonl (what `pocketdec extract --format jsonl` wrote, e.g. on dev) is repeated, ids renumbered,
into corpora of N reviews (default 10,000, 100,000 and 1,000,000); each is summarized once (--json to
/dev/null) under /usr/bin/time. Prints reviews/s and the peak resident memory for each N: constant memory
means the peak does not grow with N."""
import os
import subprocess
import sys
import tempfile


def main():
    exe, src = sys.argv[1], sys.argv[2]
    sizes = [int(x) for x in sys.argv[3:]] or [10_000, 100_000, 1_000_000]
    lines = [line.split(",", 1)[1] for line in open(src, encoding="utf-8")]  # after {"id":"..",
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            path = os.path.join(d, f"records-{n}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for i in range(n):
                    f.write(f'{{"id":"{i}",{lines[i % len(lines)]}')
            p = subprocess.run(["/usr/bin/time", "-f", "%M %e", exe, "summarize", "--records", path, "--json",
                                os.devnull], capture_output=True, text=True, check=True)
            rss, secs = p.stderr.strip().splitlines()[-1].split()
            print(f"{n:>9} reviews: {float(secs):6.2f} s, {n / max(float(secs), 1e-3):9.0f} reviews/s, "
                  f"peak RSS {int(rss) / 1024:.1f} MiB ({os.path.getsize(path) / 2**20:.0f} MiB of records)")
            os.remove(path)


main()
