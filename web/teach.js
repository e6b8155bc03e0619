/* The annotation page of `pocketdec serve --teach` (docs/serve.md, "Teach it"): one review at a time,
 * the model's records filled in and marked in place; the person accepts them (Enter), rejects one (x),
 * fixes a span by selecting text, changes a label from the schema's values, adds a record (n), says there
 * is nothing to label (0), skips (s) or undoes (u). Every answer goes to /v1/teach/answer, and the next
 * review is shown only once the server has said it is on disk. The fields and their values come from
 * the schema (the server's /v1/teach/next), so any schema works. Offsets are characters (code points),
 * as the labels file counts them, not JavaScript's UTF-16 units. The API key, when the server asks for
 * one, stays in this page's memory. */
"use strict";
(function () {
  const { $, el, status, api } = window.pdPage; // common.js
  const POLARITY = { "正面": "pol-pos", "中性": "pol-neu", "负面": "pol-neg", "好评": "pol-pos", "中评": "pol-neu",
    "差评": "pol-neg", positive: "pol-pos", neutral: "pol-neu", negative: "pol-neg" };
  let fields = [];     // the schema's fields: {name, kind, empty, values}
  let review = null;   // {id, text, chars: [code points]}
  let records = [];    // the records as the person has them now (the labels file's form)
  let active = 0;      // the chosen record
  let field = 0;       // the span field a selection fills (an index into fields)
  let busy = false;    // an answer on its way: keys wait
  let generation = null; // the model generation the page last saw: a newer one shows what it changed

  const spanFields = () => fields.map((f, i) => i).filter((i) => fields[i].kind === "span");

  function showProgress(p) {
    const m = p.model_on_labels;
    $("progress").textContent = p.labelled + " labelled, " + p.left + " left" + (p.skipped ? ", " + p.skipped + " skipped" : "") +
      " · asked by " + p.order + (m ? " · the model, as it was when each was labelled, on your " + m.reviews + " labels: F1 " + m.f1.toFixed(3) +
      " (P " + m.precision.toFixed(3) + ", R " + m.recall.toFixed(3) + ")" : "");
    document.body.dataset.labelled = p.labelled;
    if (generation !== null && p.generation > generation) showChanges();
    generation = p.generation;
  }

  /* ---------------------------------------------------------------- what a reload changed */
  const CHANGE = { added: "chg-added", removed: "chg-removed", unchanged: "chg-same" };
  const fieldText = (v) => (v === null || v === undefined ? "_" : typeof v === "object" ? v.text : v);

  /* One labelled review: its text with the records marked by their change, and the records. */
  function changeItem(it) {
    const box = el("div", "item" + (it.records.some((r) => r.change !== "unchanged") ? "" : " unchanged"));
    box.dataset.id = it.id;
    box.appendChild(el("div", "muted", "id " + it.id + " · your answer " + (it.exact_before ? "was" : "was not") +
      " matched whole, " + (it.exact_after ? "is now" : "is not now") +
      (it.fixed ? " · " + it.fixed + " of your records found now" : "") + (it.broken ? " · " + it.broken + " lost" : "")));
    const text = el("div", "text");
    Array.from(it.text).forEach((c, i) => {
      const s = el("span", "ch", c);
      it.records.forEach((r) => fields.forEach((f) => {
        const v = r[f.name];
        if (f.kind === "span" && v && i >= v.start && i < v.end) s.classList.add("on", CHANGE[r.change]);
      }));
      text.appendChild(s);
    });
    box.appendChild(text);
    const table = el("table", "records"), hr = el("tr");
    ["change"].concat(fields.map((f) => f.name), ["your answer"]).forEach((h) => hr.appendChild(el("th", "", h)));
    table.appendChild(hr);
    it.records.forEach((r) => {
      const tr = el("tr", CHANGE[r.change]);
      tr.appendChild(el("td", "", r.change));
      fields.forEach((f) => tr.appendChild(el("td", "", fieldText(r[f.name]))));
      tr.appendChild(el("td", r.right ? "right" : "wrong", r.right ? "✓" : "✗"));
      table.appendChild(tr);
    });
    box.appendChild(table);
    return box;
  }

  async function showChanges() {
    const c = await api("GET", "/v1/teach/changes").catch((e) => { status(e.message, true); return null; });
    if (!c) return;
    const pct = (x) => (c.reviews ? " (" + (100 * x / c.reviews).toFixed(0) + "%)" : "");
    $("changes-summary").textContent = "Model generation " + c.generation + ", on your " + c.reviews +
      " labelled reviews: answers matched whole " + c.exact.before + pct(c.exact.before) + " before, " +
      c.exact.after + pct(c.exact.after) + " now · your " + c.gold + " records found: " + c.matched.before +
      " before, " + c.matched.after + " now (" + c.fixed + " found now that were not, " + c.broken + " lost) · " +
      "records proposed: " + c.predicted.before + " before, " + c.predicted.after + " now · " + c.changed +
      " reviews changed (" + c.added + " records added, " + c.removed + " removed, " + c.unchanged + " unchanged)";
    const errs = $("changes-errors"), list = $("changes-list");
    errs.textContent = list.textContent = "";
    c.errors.forEach((e) => errs.appendChild(el("li", "", "id " + e.id + ": " + e.error)));
    const items = c.items.slice().sort((a, b) => (b.fixed + b.broken) - (a.fixed + a.broken));
    items.forEach((it) => list.appendChild(changeItem(it)));
    $("changes").hidden = false;
    $("review").hidden = true;
    document.body.dataset.changes = JSON.stringify({ generation: c.generation, reviews: c.reviews, changed: c.changed });
  }

  function hideChanges() {
    $("changes").hidden = true;
    $("review").hidden = !review;
    delete document.body.dataset.changes;
  }

  const toggleChanges = () => ($("changes").hidden ? showChanges() : hideChanges());

  /* The polarity-like class of a record: its last enum value's, when it is one we colour. */
  function colour(r) {
    for (let i = fields.length - 1; i >= 0; i--)
      if (fields[i].kind === "enum") return POLARITY[r[fields[i].name]] || "";
    return "";
  }

  function drawText() {
    const out = $("text");
    out.textContent = "";
    review.chars.forEach((c, i) => {
      const s = el("span", "ch", c);
      s.dataset.i = i;
      const marks = [];
      records.forEach((r, k) => spanFields().forEach((f, n) => {
        const v = r[fields[f].name];
        if (v && i >= v.start && i < v.end) {
          marks.push(k + ":" + fields[f].name);
          s.classList.add("on", "span-" + n, fields[f].name);
          const pc = colour(r);
          if (pc) s.classList.add(pc);
          if (k === active) s.classList.add("active");
        }
      }));
      if (marks.length) s.dataset.marks = marks.join(" ");
      out.appendChild(s);
    });
  }

  function cellFor(r, k, f) {
    const fd = fields[f], td = el("td");
    if (k === active && f === field) td.classList.add("field-active");
    if (fd.kind === "enum") {
      const sel = el("select");
      sel.dataset.field = fd.name;
      fd.values.forEach((v) => { const o = el("option", "", v); o.value = v; sel.appendChild(o); });
      sel.value = r[fd.name];
      sel.onchange = () => { r[fd.name] = sel.value; active = k; draw(); };
      td.appendChild(sel);
    } else if (fd.kind === "span") {
      const v = r[fd.name];
      td.appendChild(el("span", "", v ? v.text : "_"));
      td.onclick = () => { active = k; field = f; draw(); };
      if (v && fd.empty) {
        const b = el("button", "clear", "_");
        b.title = "no " + fd.name + " (_)";
        b.onclick = (ev) => { ev.stopPropagation(); r[fd.name] = null; active = k; draw(); };
        td.appendChild(b);
      }
    } else {
      const inp = el("input");
      inp.value = r[fd.name] || "";
      inp.onchange = () => { r[fd.name] = inp.value; };
      td.appendChild(inp);
    }
    return td;
  }

  function drawRecords() {
    const head = $("records-head"), body = $("records-body");
    head.textContent = body.textContent = "";
    const hr = el("tr");
    fields.forEach((f, i) => hr.appendChild(el("th", "", (i + 1) + " " + f.name)));
    hr.appendChild(el("th", "", "confidence"));
    hr.appendChild(el("th", "", ""));
    head.appendChild(hr);
    records.forEach((r, k) => {
      const tr = el("tr", "record" + (k === active ? " active" : ""));
      tr.onclick = () => { if (active !== k) { active = k; draw(); } };
      fields.forEach((f, i) => tr.appendChild(cellFor(r, k, i)));
      tr.appendChild(el("td", "num", r._confidence === undefined ? "" : r._confidence.toFixed(4)));
      const x = el("button", "", "×");
      x.title = "reject this record (x)";
      x.onclick = (ev) => { ev.stopPropagation(); reject(k); };
      const td = el("td");
      td.appendChild(x);
      tr.appendChild(td);
      body.appendChild(tr);
    });
  }

  function draw() {
    if (active >= records.length) active = records.length - 1;
    if (active < 0) active = 0;
    drawText();
    drawRecords();
    document.body.dataset.records = JSON.stringify(records.map(clean));
  }

  /* A record as the labels file holds it: the schema's fields only. */
  function clean(r) {
    const o = {};
    fields.forEach((f) => { o[f.name] = r[f.name] === undefined ? null : r[f.name]; });
    return o;
  }

  function reject(k) {
    records.splice(k, 1);
    draw();
  }

  function add() {
    const r = {};
    fields.forEach((f) => { r[f.name] = f.kind === "enum" ? f.values[0] : f.kind === "span" ? null : ""; });
    records.push(r);
    active = records.length - 1;
    field = spanFields()[0] === undefined ? 0 : spanFields()[0];
    draw();
  }

  /* The character index of a selection boundary (code points; the characters are one element each). */
  function charAt(node, offset, end) {
    let e = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    if (e === $("text")) {
      const kids = e.children;
      return offset >= kids.length ? review.chars.length : +kids[offset].dataset.i;
    }
    if (!e || e.dataset.i === undefined) return null;
    const i = +e.dataset.i;
    if (node.nodeType === Node.TEXT_NODE) return offset > 0 ? i + 1 : i;
    return end && offset > 0 ? i + 1 : i;
  }

  /* Text selected in the review: the active record's active span field becomes it. */
  function selected() {
    const sel = window.getSelection();
    if (!review || !sel || sel.isCollapsed || sel.rangeCount === 0) return;
    const rg = sel.getRangeAt(0);
    if (!$("text").contains(rg.commonAncestorContainer)) return;
    const a = charAt(rg.startContainer, rg.startOffset, false), b = charAt(rg.endContainer, rg.endOffset, true);
    sel.removeAllRanges();
    if (a === null || b === null || b <= a) return;
    if (!records.length) add();
    if (fields[field].kind !== "span") field = spanFields()[0];
    if (field === undefined) return;
    records[active][fields[field].name] = { text: review.chars.slice(a, b).join(""), start: a, end: b };
    draw();
  }

  function show(data) {
    showProgress(data.progress);
    fields = data.progress.fields;
    const r = data.review;
    document.body.dataset.busy = "";
    if (!r) {
      review = null;
      $("review").hidden = true;
      $("done").hidden = false;
      document.body.dataset.review = "";
      document.body.dataset.ready = "done";
      return;
    }
    review = { id: r.id, text: r.text, chars: Array.from(r.text) };
    const given = r.previous || r.records;
    records = given.map((x, k) => Object.assign({}, x, r.previous ? {} : { _confidence: r.confidences[k] }));
    active = 0;
    field = spanFields()[0] === undefined ? 0 : spanFields()[0];
    $("review").hidden = false;
    $("done").hidden = true;
    $("review-id").textContent = "id " + r.id;
    $("review-note").textContent = r.previous ? "your answer, taken back" : records.length ? "the model's records" : "the model found nothing";
    draw();
    document.body.dataset.review = r.id;
    document.body.dataset.ready = "review";
  }

  async function next() {
    show(await api("GET", "/v1/teach/next"));
  }

  /* Send an answer; the next review only once the server has it on disk. */
  async function send(path, body) {
    if (busy) return;
    busy = true;
    document.body.dataset.busy = "1";
    try {
      const r = await api("POST", path, body);
      status(path.endsWith("undo") ? "taken back: review " + (r.id || "") : "saved: review " + r.id + " (" + r.answer + ")");
      await next();
    } catch (e) {
      status(e.message, true);
      document.body.dataset.busy = "";
      if (e.status === 409) await next().catch(() => {});
    } finally {
      busy = false;
      document.body.dataset.answers = (+document.body.dataset.answers || 0) + 1;
    }
  }

  const accept = () => review && send("/v1/teach/answer", { id: review.id, records: records.map(clean) });
  const nothing = () => review && send("/v1/teach/answer", { id: review.id, records: [] });
  const skip = () => review && send("/v1/teach/skip", { id: review.id });
  const undo = () => send("/v1/teach/undo", {});

  function cycle(f, back) {
    if (!records.length) return;
    const vs = fields[f].values, r = records[active], k = vs.indexOf(r[fields[f].name]);
    r[fields[f].name] = vs[(k + (back ? vs.length - 1 : 1)) % vs.length];
    draw();
  }

  function onKey(ev) {
    if (ev.target.closest && ev.target.closest("input, select, textarea, #key")) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey || busy || !$("key").hidden) return;
    const digit = /^Digit([1-9])$/.exec(ev.code);
    let done = true;
    if (!$("changes").hidden && (ev.key === "c" || ev.key === "Escape")) hideChanges();
    else if (!$("changes").hidden) done = false;
    else if (ev.key === "c") showChanges();
    else if (ev.key === "Enter") accept();
    else if (ev.key === "0" && !ev.shiftKey) nothing();
    else if (digit && +digit[1] <= fields.length) {
      const f = +digit[1] - 1;
      if (fields[f].kind === "span") { field = f; draw(); } else if (fields[f].kind === "enum") cycle(f, ev.shiftKey);
    } else if (ev.key === "_" && records.length && fields[field].empty) { records[active][fields[field].name] = null; draw(); }
    else if (ev.key === "x" || ev.key === "Delete") { if (records.length) reject(active); }
    else if (ev.key === "n") add();
    else if (ev.key === "s") skip();
    else if (ev.key === "u") undo();
    else if (ev.key === "ArrowDown" || ev.key === "j") { active = Math.min(active + 1, records.length - 1); draw(); }
    else if (ev.key === "ArrowUp" || ev.key === "k") { active = Math.max(active - 1, 0); draw(); }
    else done = false;
    if (done) ev.preventDefault();
  }

  $("accept").onclick = accept;
  $("add").onclick = add;
  $("nothing").onclick = nothing;
  $("skip").onclick = skip;
  $("undo").onclick = undo;
  $("changes-open").onclick = toggleChanges;
  $("changes-close").onclick = hideChanges;
  $("text").addEventListener("mouseup", selected);
  document.addEventListener("keydown", onKey);
  next().catch((e) => { status(e.message, true); document.body.dataset.ready = "error"; });
  /* a reload while the page waits: progress says the generation, the changes come up by themselves */
  setInterval(() => {
    if (!busy && !document.hidden && generation !== null) api("GET", "/v1/teach/progress").then(showProgress, () => {});
  }, 5000);
})();
