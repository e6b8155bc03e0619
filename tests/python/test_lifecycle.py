"""C handles freed by close(), with blocks and finalizers (RSS stable over 1,000 create/free
cycles), one model shared by threads, the GIL released during forward passes, and objects
closed while another thread uses them."""

import ctypes
import gc
import threading
import time

import helpers
from helpers import SANITIZED, SCHEMA, TIANCHI

import numpy as np
import pytest

import pocketdec
from pocketdec import tianchi_eval

TEXTS = [t for _, t in helpers.dev_reviews(8)]


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]


def heap_bytes():
    """Bytes that malloc has handed out and not got back (glibc's mallinfo2), or None: finer
    than RSS, it sees a leak of a few hundred bytes a cycle."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = _Mallinfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def cycle(k):
    """Every kind of object made, used and freed once: by close() and with blocks, or
    (odd k) by finalizers."""
    m = pocketdec.Model(TIANCHI, threads=1)
    ids = m.tokenizer.encode(TEXTS[0])
    m.logits(ids)
    m.hidden(ids)
    ex = pocketdec.Extractor(m, SCHEMA)
    records = ex.extract(TEXTS[0])
    d = pocketdec.Decider(m, head=False)
    d.decide(TEXTS[0], "类别？", ["物流", "包装"])
    s = tianchi_eval.score([(1, "物流", "很快", "物流", "正面")], [(1, *r.values()) for r in records])
    if k % 2 == 0:
        for obj in (s, d, ex, m):
            obj.close()
    del m, ex, d, s


def test_rss_stable_over_1000_cycles():
    n = 50 if SANITIZED else 1000  # ASan keeps freed memory in quarantine: no RSS figure there
    for k in range(20):
        cycle(k)
    gc.collect()
    before, heap = rss_mb(), heap_bytes()
    for k in range(n):
        cycle(k)
    gc.collect()
    grown = rss_mb() - before
    heap = heap_bytes() - heap if heap is not None else None
    print(f"RSS {before:.1f} MB -> {before + grown:.1f} MB, malloc'ed bytes {heap} more, over {n} cycles")
    if not SANITIZED:
        assert grown < 2.0, f"RSS grew by {grown:.1f} MB over {n} create/free cycles"
        assert heap is None or heap < 128 * 1024, f"{heap} more bytes malloc'ed after {n} create/free cycles"


def test_finalizers_free_what_is_dropped():
    m = pocketdec.Model(TIANCHI)
    ex = pocketdec.Extractor(m, SCHEMA)
    finalizers = [m._finalizer, ex._finalizer]
    ex.extract(TEXTS[0])
    del m, ex
    gc.collect()
    assert not any(f.alive for f in finalizers)


def test_threads_share_one_model():
    with pocketdec.Model(TIANCHI, threads=1) as m, pocketdec.Extractor(m, SCHEMA) as ex:
        ids = [m.tokenizer.encode(t) for t in TEXTS]
        want_logits = [m.logits(i) for i in ids]
        want_records = [ex.extract(t) for t in TEXTS]
        want_decisions = {}
        with pocketdec.Decider(m, head=False) as d:
            for t in TEXTS:
                want_decisions[t] = list(d.decide(t, "类别？", ["物流", "包装", "价格"]))
        failures = []

        def work(k):
            try:
                with pocketdec.Decider(m, head=False) as mine:  # a Decider per thread, one model
                    for rep in range(6):
                        j = (k + rep) % len(TEXTS)
                        assert np.array_equal(m.logits(ids[j]), want_logits[j])
                        assert ex.extract(TEXTS[j]) == want_records[j]  # one Extractor shared too
                        assert list(mine.decide(TEXTS[j], "类别？", ["物流", "包装", "价格"])) == \
                            want_decisions[TEXTS[j]]
            except Exception as e:  # reported by the main thread
                failures.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures


def test_forward_passes_release_the_gil():
    with pocketdec.Model(TIANCHI, threads=1) as m:
        ids = list(range(10, 1610))
        start = time.perf_counter()
        m.hidden(ids)
        one = time.perf_counter() - start
        done, ticks = threading.Event(), 0

        def forward():
            for _ in range(3):
                m.hidden(ids)
            done.set()

        t = threading.Thread(target=forward)
        t.start()
        while not done.is_set():  # runs only while the other thread is outside the interpreter
            ticks += 1
        t.join()
        # holding the GIL, three passes would leave this loop a few switch intervals (5 ms) at most
        assert ticks > 1000, f"{ticks} iterations of the main thread during 3 x {one * 1000:.0f} ms"


def test_closing_while_another_thread_runs():
    m = pocketdec.Model(TIANCHI, threads=1)
    ex = pocketdec.Extractor(m, SCHEMA)
    seen, errors = [], []

    def work():
        try:
            for records in ex.extract_many(TEXTS * 50, parallel=2):
                seen.append(records)
        except pocketdec.Error as e:
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    while len(seen) < 3:
        time.sleep(0.001)
    m.close()  # the C model goes only when the extractions in flight are done
    t.join()
    assert len(errors) == 1 and "Model is closed" in errors[0].message
    assert 3 <= len(seen) < len(TEXTS) * 50
    ex.close()


@pytest.mark.parametrize("make", [
    lambda: pocketdec.Model(TIANCHI),
    lambda: pocketdec.Extractor(pocketdec.Model(TIANCHI), SCHEMA),
    lambda: pocketdec.Decider(pocketdec.Model(TIANCHI), head=False),
    lambda: pocketdec.Tokenizer(helpers.TIANCHI + "/base/tokenizer.json"),
])
def test_with_block_and_close(make):
    with make() as obj:
        assert not obj.closed
    assert obj.closed
    obj.close()
    assert "closed" in repr(obj) or obj.closed
