/* The playground of `pocketdec serve` (docs/serve.md, "The playground"): a review or a file of them
 * in, each review shown with its spans marked in place and its records in a table; a Score tab with a
 * decision head; a "why" view with a tagger head. Every request goes to this server (the page's
 * Content-Security-Policy allows no other); the API key, when the server asks for one, stays in this
 * page's memory. */
"use strict";
(function () {
  const { $, el, status, api } = window.pdPage; // common.js
  let info = null;      // GET /v1/info: the head, the fields, the limits
  let shown = [];       // the reviews on the page: {id, text, records, problem, el}
  let lines = null;     // the last file's lines as the command writes them: {jsonl: [], tianchi: []}

  const POLARITY = { "正面": "pol-pos", "中性": "pol-neu", "负面": "pol-neg" };

  function minConfidence() {
    return parseFloat($("min-confidence").value);
  }

  /* The review's text with each record's spans marked where they are: runs of characters under the
   * same records share an element that says which (data-marks "k:field ...") and where it starts
   * (data-at, in characters), so a reader and a test can check them against the records. */
  function markedText(text, records) {
    const chars = Array.from(text);
    const marks = chars.map(() => []);
    records.forEach((r, k) => {
      for (const [field, [start, end]] of Object.entries(r.spans || {}))
        for (let i = start; i < end && i < chars.length; i++) marks[i].push(k + ":" + field);
    });
    const out = el("div", "text");
    for (let i = 0; i < chars.length;) {
      let j = i + 1;
      const here = marks[i].join(" ");
      while (j < chars.length && marks[j].join(" ") === here) j++;
      const piece = chars.slice(i, j).join("");
      if (!here) {
        out.append(piece);
      } else {
        const [k, field] = marks[i][0].split(":");
        const r = records[+k];
        const s = el("span", "span " + field + " " + (POLARITY[r.polarity] || ""), piece);
        s.dataset.marks = here;
        s.dataset.at = String(i);
        s.title = marks[i].map((m) => {
          const [kk, f] = m.split(":");
          const rr = records[+kk];
          return f + " of record " + (+kk + 1) + " (" + (rr.category || "") + " " + (rr.polarity || "") +
                 ", confidence " + rr.confidence.toFixed(2) + ", " + f + " " + (rr.probs[f] ?? 0).toFixed(2) + ")";
        }).join("\n");
        out.append(s);
        for (const m of marks[i]) { // the confidence after the record's last marked character
          const [kk, f] = m.split(":");
          const rr = records[+kk];
          const last = Math.max(...Object.values(rr.spans).map((se) => se[1]));
          if (rr.spans[f][1] === j && j === last) out.append(el("sup", "conf", rr.confidence.toFixed(2)));
        }
      }
      i = j;
    }
    return out;
  }

  function recordTable(records) {
    const fields = info ? info.fields : Object.keys(records[0] || {}).filter((f) => !["spans", "probs", "confidence"].includes(f));
    const t = el("table", "records");
    const head = t.insertRow();
    for (const f of [...fields, "confidence"]) head.append(el("th", "", f));
    records.forEach((r) => {
      const row = t.insertRow();
      row.className = "record";
      row.dataset.confidence = String(r.confidence);
      for (const f of fields) row.insertCell().textContent = r[f];
      const c = row.insertCell();
      c.className = "num";
      c.textContent = r.confidence.toFixed(4);
    });
    return t;
  }

  /* One review: its id, its marked text, its records (those at or above the slider), a why button. */
  function drawReview(item) {
    const kept = item.records.filter((r) => r.confidence >= minConfidence());
    const box = item.el || el("div", "review");
    box.replaceChildren();
    box.dataset.id = item.id;
    const top = el("div");
    if (item.id !== null) top.append(el("span", "id", "id " + item.id));
    if (info && info.why && item.text) {
      const b = el("button", "why-button", "why");
      b.type = "button";
      b.onclick = () => why(item, box);
      top.append(b);
    }
    box.append(top);
    if (item.problem) box.append(el("div", "problem", item.problem));
    box.append(markedText(item.text, kept));
    if (kept.length) box.append(recordTable(kept));
    else box.append(el("div", "muted", item.records.length ? "every record is below the confidence shown" : "no record"));
    item.el = box;
    return box;
  }

  async function why(item, box) {
    try {
      status("asking why...");
      const data = await api("POST", "/v1/why", { text: item.text });
      let view = box.querySelector(".why");
      if (!view) box.append((view = el("div", "why")));
      view.replaceChildren();
      whyRender(view, data);
      status("");
    } catch (e) {
      status(e.message, true);
    }
  }

  function show(items) {
    shown = items;
    const results = $("results");
    results.replaceChildren(...items.map(drawReview));
  }

  async function extractText(text) {
    lines = null;
    $("downloads").hidden = true;
    $("views").hidden = true;
    view("reviews");
    status("extracting...");
    try {
      const t0 = performance.now();
      const data = await api("POST", "/v1/extract", { text });
      show([{ id: null, text, records: data.records }]);
      status(data.records.length + " records in " + Math.round(performance.now() - t0) + " ms");
    } catch (e) {
      status(e.message, true);
    }
  }

  /* ---------------------------------------------------------------- files */

  /* The file read by the server (POST /v1/reviews/read: libpocketdec's reader of reviews, the one
   * `pocketdec extract` reads with), its bytes as they are: the CSV or JSONL rule, the id and text
   * columns, the encoding, and each broken row as a problem ("FILE:LINE: what") are the command's. */
  async function readFile(file) {
    const q = new URLSearchParams({ name: file.name, id_column: $("id-column").value.trim(),
                                    text_column: $("text-column").value.trim(), encoding: $("encoding").value.trim() });
    return api("POST", "/v1/reviews/read?" + q, file);
  }

  /* ---------------------------------------------------------------- the summary */

  /* A file's results summarized by the server (POST /v1/summarize: the summary module `pocketdec
   * summarize` runs, with the bundle's rates); the page only draws it. */
  const NUMBERS = ["records", "reviews", "share", "estimate", "low", "high", "support"];
  const COUNTS = ["records", "reviews", "support"]; // integers; the others 2 decimals (share 4), as the JSON rounds them
  let summary = null;

  function view(name) {
    for (const v of ["summary", "reviews"]) $("view-" + v).setAttribute("aria-selected", String(v === name));
    $("summary").hidden = name !== "summary";
    $("results").hidden = name !== "reviews";
  }

  /* A review's text with the summary's marks of a cell ({start, end, field}, code points; one that overlaps
   * the mark before it is left unmarked, as the command's HTML does). */
  function markedSpans(text, marks, polarity) {
    const chars = Array.from(text), out = el("div", "text");
    let at = 0;
    for (const m of [...marks].sort((a, b) => a.start - b.start)) {
      if (m.start < at || m.end <= m.start) continue;
      out.append(chars.slice(at, m.start).join(""));
      const s = el("span", "span " + m.field + " " + (POLARITY[polarity] || ""), chars.slice(m.start, m.end).join(""));
      s.dataset.field = m.field;
      out.append(s);
      at = m.end;
    }
    out.append(chars.slice(at).join(""));
    return out;
  }

  /* A table of summary entries, its cells carrying their JSON key (data-key); onOpen: a cell's category is a
   * link that shows its reviews. */
  function summaryTable(cls, entries, onOpen) {
    const t = el("table", "summary " + cls);
    const head = t.insertRow();
    for (const h of ["category", "polarity", ...NUMBERS]) head.append(el("th", "", h === "low" ? "90% low" : h === "high" ? "90% high" : h));
    entries.forEach((e, k) => {
      const row = t.insertRow();
      row.className = "entry";
      const c = row.insertCell();
      c.dataset.key = "category";
      if (onOpen) {
        const b = el("button", "cell-link", e.category);
        b.type = "button";
        b.dataset.cell = String(k);
        b.onclick = () => { onOpen(k); t.querySelectorAll("tr.entry").forEach((r, j) => r.classList.toggle("open", j === k)); };
        c.append(b);
      } else {
        c.textContent = e.category ?? "(all)";
      }
      row.insertCell().textContent = e.polarity;
      row.lastChild.dataset.key = "polarity";
      for (const key of NUMBERS) {
        const v = row.insertCell();
        v.className = "num";
        v.dataset.key = key;
        v.textContent = e[key] === null ? "-" : COUNTS.includes(key) ? String(e[key]) : e[key].toFixed(key === "share" ? 4 : 2);
      }
    });
    return t;
  }

  /* Every review of cell k, its spans marked. */
  function openCell(k) {
    const e = summary.cells[k], box = $("cell-reviews");
    box.replaceChildren(el("h3", "", e.category + " / " + e.polarity + ": " + e.listed.length + " reviews"));
    box.dataset.cell = String(k);
    for (const r of e.listed) {
      const d = el("div", "cell-review");
      d.dataset.id = String(r.id);
      d.append(el("span", "id", "id " + r.id), markedSpans(r.text || "", r.marks, e.polarity));
      box.append(d);
    }
  }

  function drawSummary(s) {
    summary = s;
    const box = $("summary");
    box.replaceChildren(
      el("p", "muted", s.reviews + " reviews, " + s.records + " records; estimates: counts corrected by the " +
         "model's measured precision and recall, with 90% intervals (docs/summarize.md). Click a category for its reviews."),
      summaryTable("polarity", Object.values(s.polarity), null),
      summaryTable("cells", s.cells, openCell),
      el("div", "", ""));
    box.lastChild.id = "cell-reviews";
    $("views").hidden = false;
    view("summary");
  }

  async function summarize(items) {
    status("summarizing...");
    const s = await api("POST", "/v1/summarize", { reviews: items.map((x) => ({ id: x.id, text: x.text, records: x.records })) });
    drawSummary(s);
  }

  async function extractFile(file) {
    let rows, problems;
    try {
      status("reading " + file.name + "...");
      ({ rows, problems } = await readFile(file));
    } catch (e) {
      status(e.message, true);
      return;
    }
    const items = [];
    lines = { jsonl: [], tianchi: [] };
    const per = (info && info.max_texts) || 16;
    try {
      for (let k = 0; k < rows.length; k += per) {
        status("extracting " + file.name + ": " + k + " of " + rows.length + " reviews...");
        const part = rows.slice(k, k + per);
        const req = { texts: part.map((r) => r.text), ids: part.map((r) => r.id) };
        // the other columns as the server read them, a string each: an object would reorder "2024"-like names
        if (part.some((r) => r.extra_json)) req.extras = part.map((r) => r.extra_json || null);
        const data = await api("POST", "/v1/extract", req);
        data.results.forEach((res, j) => {
          items.push({ id: part[j].id, text: part[j].text, records: res.records || [], problem: res.error || null });
          lines.jsonl.push(res.jsonl);
          lines.tianchi.push(res.tianchi);
        });
      }
    } catch (e) {
      status(e.message, true);
      lines = null;
      return;
    }
    show(items);
    $("downloads").hidden = false;
    try {
      await summarize(items);
    } catch (e) {
      view("reviews");
      status("the summary: " + e.message, true);
      return;
    }
    status(rows.length + " reviews of " + file.name + ", " + items.reduce((n, x) => n + x.records.length, 0) +
           " records" + (problems.length ? "; skipped: " + problems.join("; ") : ""), problems.length > 0);
  }

  function download(kind) {
    const name = kind === "jsonl" ? "records.jsonl" : "Result.csv";
    const blob = new Blob(lines[kind], { type: kind === "jsonl" ? "application/x-ndjson" : "text/csv" });
    const a = el("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  /* ---------------------------------------------------------------- scoring */

  async function score() {
    const body = { text: $("score-text").value, question: $("question").value,
                   candidates: $("candidates").value.split("\n").map((c) => c.trim()).filter((c) => c) };
    try {
      status("scoring...");
      const data = await api("POST", "/v1/score", body);
      const bars = el("div", "bars");
      for (const c of data.candidates) {
        const b = el("div", "bar");
        b.dataset.label = c.label;
        b.dataset.prob = String(c.prob);
        const track = el("div", "track"), fill = el("div", "fill");
        fill.style.width = (100 * c.prob).toFixed(1) + "%";
        track.append(fill);
        b.append(el("span", "", c.label), track, el("span", "num", c.prob.toFixed(4)));
        bars.append(b);
      }
      $("scores").replaceChildren(bars);
      status("");
    } catch (e) {
      status(e.message, true);
    }
  }

  function tab(name) {
    for (const t of ["extract", "score"]) {
      $("tab-" + t).setAttribute("aria-selected", String(t === name));
      $(t + "-pane").hidden = t !== name;
    }
  }

  /* ---------------------------------------------------------------- start */

  async function start() {
    $("extract-form").onsubmit = (ev) => { ev.preventDefault(); extractText($("text").value); };
    $("file").onchange = () => { if ($("file").files[0]) extractFile($("file").files[0]); };
    $("min-confidence").oninput = () => {
      $("min-confidence-value").textContent = minConfidence().toFixed(2);
      shown.forEach(drawReview);
    };
    $("download-csv").onclick = () => download("tianchi");
    $("download-jsonl").onclick = () => download("jsonl");
    $("share").onclick = () => {
      const link = location.origin + "/?text=" + encodeURIComponent($("text").value);
      history.replaceState(null, "", link);
      status("link: " + link);
    };
    $("score-form").onsubmit = (ev) => { ev.preventDefault(); score(); };
    $("tab-extract").onclick = () => tab("extract");
    $("tab-score").onclick = () => tab("score");
    $("view-summary").onclick = () => view("summary");
    $("view-reviews").onclick = () => view("reviews");
    try {
      info = await api("GET", "/v1/info");
      $("served").textContent = info.head + " head, fields " + info.fields.join(", ");
      $("tab-score").hidden = !info.score;
    } catch (e) {
      status(e.message, true);
      return;
    }
    const q = new URLSearchParams(location.search).get("text") ??
              new URLSearchParams(location.hash.slice(1)).get("text");
    if (q !== null) {
      $("text").value = q;
      await extractText(q);
    }
    document.body.dataset.ready = "1"; // for tests: the first answer is drawn
  }

  start();
})();
