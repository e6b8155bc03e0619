#!/usr/bin/python3
"""Which category and polarity does a review give an (aspect, opinion) pair? The 39
"category/polarity" candidates, scored by the bundled pointer head in one forward pass.

    PYTHONPATH=python python3 examples/python/score_labels.py "物流很快，第二天就到了，包装也很好" 物流 很快
"""
import sys

import pocketdec

text, aspect, opinion = sys.argv[1:4]
categories = "包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他".split()
candidates = [f"{c}/{p}" for c in categories for p in ("正面", "中性", "负面")]
with pocketdec.Model("models/tianchi-gen") as model, pocketdec.Decider(model) as decider:
    decision = decider.decide(text, f"属性：{aspect}；观点：{opinion}", candidates)
for label, prob in sorted(decision, key=lambda pair: -pair[1])[:5]:
    print(f"{label}\t{prob:.4f}")
