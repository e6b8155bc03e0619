/* why.js - draws pd_tag_explain's JSON (docs/extraction-by-decisions.md,
 * "Why it decided so") into an element: the characters' heat strip, the
 * spans, the links as arcs, each record's labels and the features that
 * weighed most. No outside assets; the playground reuses it as is. */
function whyRender(root, d) {
  'use strict';
  var PALETTE = ['#2f7fd1', '#e07b24', '#3a9d5d', '#a04fc0'];
  var color = {};
  d.span_fields.forEach(function (f, k) { color[f] = PALETTE[k % PALETTE.length]; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function pct(p) { return (100 * p).toFixed(p >= 0.995 || p < 0.001 ? 0 : 1) + '%'; }
  function num(x) { return (x >= 0 ? '+' : '') + x.toFixed(3); }
  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a.toFixed(3) + ')';
  }
  function spanName(s) { return s < 0 ? '(none)' : d.spans[s].text; }

  root.textContent = '';
  root.className = 'why';
  root.appendChild(el('h2', null, 'Review'));
  root.appendChild(el('div', null, d.text.length ? d.text : '(empty text)'));
  var passes = el('div', 'note', d.characters.length + ' characters, ' + d.spans.length + ' spans, ' +
                  d.links.length + ' links, ' + d.records.length + ' candidate records; ' + d.forward_passes +
                  ' forward pass' + (d.forward_passes === 1 ? '' : 'es'));
  root.appendChild(passes);

  /* the heat strip: per character, per span field, P(inside a span of it) */
  root.appendChild(el('h2', null, 'Characters: P(inside a span of each field)'));
  var legend = el('div', 'legend note');
  d.span_fields.forEach(function (f) {
    var s = el('span'); var sw = el('i', 'sw'); sw.style.background = color[f];
    s.appendChild(sw); s.appendChild(document.createTextNode(f)); legend.appendChild(s);
  });
  legend.appendChild(el('span', null, 'bar height and shade: the CRF marginal; dark border: inside a decided span'));
  root.appendChild(legend);
  var strip = el('div', 'strip');
  var inSpan = d.characters.map(function () { return null; });
  d.spans.forEach(function (s) { for (var c = s.chars[0]; c < s.chars[1]; c++) inSpan[c] = s.field; });
  d.characters.forEach(function (ch, i) {
    var cell = el('div', 'ch' + (inSpan[i] ? ' in' : ''));
    var best = null, bp = 0;
    d.span_fields.forEach(function (f) { if (ch.inside[f] > bp) { bp = ch.inside[f]; best = f; } });
    cell.style.background = best ? alpha(color[best], 0.85 * bp) : '#fff';
    if (bp > 0.6) cell.style.color = '#fff';
    cell.appendChild(el('div', 'c', ch.text.trim() ? ch.text : '\u2423'));
    var bars = el('div', 'bars');
    d.span_fields.forEach(function (f) {
      var b = el('i'); b.style.height = Math.max(1, Math.round(14 * ch.inside[f])) + 'px';
      b.style.background = bp > 0.6 ? '#fff' : color[f]; bars.appendChild(b);
    });
    cell.appendChild(bars);
    cell.appendChild(el('div', 'tag', ch.tag === 'O' ? '' : ch.tag.replace(/-.*/, '')));
    cell.title = ch.text + '  bytes ' + ch.bytes[0] + '-' + ch.bytes[1] + '  tag ' + ch.tag + '\nO ' + pct(ch.outside) +
      d.span_fields.map(function (f) { return '\n' + f + ' ' + pct(ch.inside[f]); }).join('');
    strip.appendChild(cell);
  });
  root.appendChild(strip);

  /* the spans */
  root.appendChild(el('h2', null, 'Spans: P(exactly this span)'));
  if (!d.spans.length) root.appendChild(el('div', 'note', 'no span'));
  d.spans.forEach(function (s, i) {
    var c = el('span', 'chip', '#' + i + ' ' + s.field + ' \u300c' + s.text + '\u300d ' + pct(s.probability));
    c.style.background = alpha(color[s.field], 0.15); c.style.borderColor = color[s.field];
    root.appendChild(c);
  });

  /* the links: spans in text order as boxes, arcs from each `from` span to its choice (solid) and runner-up (dashed) */
  if (d.link) {
    root.appendChild(el('h2', null, 'Links: each ' + d.link.from + ' to its ' + d.link.to));
    if (!d.links.length) root.appendChild(el('div', 'note', 'no ' + d.link.from + ' span: nothing to link'));
    else root.appendChild(arcs());
  }

  function arcs() {
    var boxes = [], x = 10, H = 30, pad = 14;
    d.spans.forEach(function (s) {
      var w = 16 * Array.from(s.text).length + 16;
      boxes.push({ x: x, w: w, label: s.text, field: s.field }); x += w + pad;
    });
    boxes.push({ x: x, w: 52, label: '(none)', field: null }); x += 52 + pad;
    var top = Math.min(240, 40 + 0.3 * x), down = top;
    var g = svg('svg', { width: Math.max(x, 300), height: top + H + down, role: 'img' });
    boxes.forEach(function (b) {
      g.appendChild(svg('rect', { x: b.x, y: top, width: b.w, height: H, rx: 4,
        fill: b.field ? alpha(color[b.field], 0.15) : '#f3f3f3', stroke: b.field ? color[b.field] : '#999' }));
      var t = svg('text', { x: b.x + b.w / 2, y: top + 20, 'text-anchor': 'middle' }); t.textContent = b.label; g.appendChild(t);
    });
    function mid(s) { var b = boxes[s < 0 ? boxes.length - 1 : s]; return b.x + b.w / 2; }
    d.links.forEach(function (l, k) {
      var x0 = mid(l.from), x1 = mid(l.choice), h = Math.min(top - 16, 18 + 0.3 * Math.abs(x1 - x0) + 4 * k); /* wider, higher */
      var p = svg('path', { d: 'M' + x0 + ' ' + top + ' C' + x0 + ' ' + (top - h) + ' ' + x1 + ' ' + (top - h) + ' ' + x1 + ' ' + top,
        fill: 'none', stroke: '#1d2330', 'stroke-width': 2 });
      g.appendChild(p);
      var t = svg('text', { x: (x0 + x1) / 2, y: top - 0.75 * h - 3, 'text-anchor': 'middle' });
      t.textContent = pct(l.probability); g.appendChild(t);
      if (l.runner_up) {
        var x2 = mid(l.runner_up.to), y = top + H, h2 = Math.min(down - 22, 16 + 0.3 * Math.abs(x2 - x0) + 4 * k);
        g.appendChild(svg('path', { d: 'M' + x0 + ' ' + y + ' C' + x0 + ' ' + (y + h2) + ' ' + x2 + ' ' + (y + h2) + ' ' + x2 + ' ' + y,
          fill: 'none', stroke: '#8a93a6', 'stroke-width': 1.5, 'stroke-dasharray': '5 4' }));
        var t2 = svg('text', { x: (x0 + x2) / 2, y: y + 0.75 * h2 + 12, 'text-anchor': 'middle', fill: '#5b6475' });
        t2.textContent = 'runner-up ' + pct(l.runner_up.probability); g.appendChild(t2);
      }
    });
    var wrap = el('div'); wrap.style.overflowX = 'auto'; wrap.appendChild(g);
    wrap.appendChild(el('div', 'note', 'solid above: the chosen ' + d.link.to + ' (softmax of the link scores, none included); dashed below: the runner-up'));
    return wrap;
  }

  /* the labels of each candidate record */
  root.appendChild(el('h2', null, 'Records: the three likeliest labels'));
  if (!d.records.length) root.appendChild(el('div', 'note', 'no candidate record'));
  function bars(rows) {
    var t = el('table');
    rows.forEach(function (r) {
      var tr = el('tr'); tr.appendChild(el('td', null, r[0]));
      var td = el('td'); var b = el('span', 'bar'); b.style.width = Math.round(120 * r[1]) + 'px'; td.appendChild(b); tr.appendChild(td);
      tr.appendChild(el('td', 'num', pct(r[1]))); t.appendChild(tr);
    });
    return t;
  }
  d.records.forEach(function (r, i) {
    var card = el('div', 'card' + (r.fate === 'written' ? '' : ' dropped'));
    var head = el('div');
    head.appendChild(el('b', null, '#' + i + ' ' + Object.keys(r.values).map(function (k) { return r.values[k]; }).join(' \u00b7 ')));
    head.appendChild(el('span', 'fate', r.fate.replace('_', ' ') + ', confidence ' + pct(r.confidence)));
    card.appendChild(head);
    if (r.top) {
      var cols = el('div', 'cols'), joint = el('div');
      joint.appendChild(el('div', 'note', 'label classes'));
      joint.appendChild(bars(r.top.map(function (t) {
        return [t.values ? Object.keys(t.values).map(function (k) { return t.values[k]; }).join(' / ') : '(no record)', t.probability];
      })));
      cols.appendChild(joint);
      d.label_fields.forEach(function (f) {
        var c = el('div'); c.appendChild(el('div', 'note', f));
        c.appendChild(bars(r.labels[f].map(function (v) { return [v.value, v.probability]; }))); cols.appendChild(c);
      });
      card.appendChild(cols);
    }
    root.appendChild(card);
  });

  /* what weighed most in each decision */
  root.appendChild(el('h2', null, 'Features that weighed most, beside the trunk'));
  root.appendChild(el('div', 'note', 'score = trunk (the dense part: the model\u2019s hidden states) + sparse (the head\u2019s hashed features). ' +
    'Spans: their tags\u2019 emissions over O; links: the chosen candidate\u2019s score; records: the argmax class\u2019s logit. ' +
    'A name is the template, "=", and the values its atoms read.'));
  var decisions = [];
  d.spans.forEach(function (s, i) { decisions.push(['span #' + i + ' ' + s.field + ' \u300c' + s.text + '\u300d', s.why]); });
  d.links.forEach(function (l) { decisions.push(['link \u300c' + spanName(l.from) + '\u300d \u2192 \u300c' + spanName(l.choice) + '\u300d', l.why]); });
  d.records.forEach(function (r, i) { if (r.why) decisions.push(['record #' + i + ' label', r.why]); });
  if (!decisions.length) root.appendChild(el('div', 'note', 'no decision'));
  var t = el('table'), hr = el('tr');
  ['decision', 'score', 'trunk | sparse', 'trunk share', 'top features (name, weight)'].forEach(function (h) { hr.appendChild(el('th', null, h)); });
  t.appendChild(hr);
  decisions.forEach(function (dc) {
    var w = dc[1], tr = el('tr');
    tr.appendChild(el('td', null, dc[0]));
    tr.appendChild(el('td', 'num', num(w.score)));
    var share = el('td'), bar = el('span', 'share'), a = el('i', 't'), b = el('i', 's');
    var m = Math.abs(w.trunk) + Math.abs(w.sparse) || 1;
    a.style.width = (100 * Math.abs(w.trunk) / m) + '%'; b.style.width = (100 * Math.abs(w.sparse) / m) + '%';
    bar.appendChild(a); bar.appendChild(b); share.appendChild(bar);
    share.appendChild(el('span', 'note', ' ' + num(w.trunk) + ' | ' + num(w.sparse))); tr.appendChild(share);
    tr.appendChild(el('td', 'num', pct(w.trunk_share)));
    var f = el('td');
    if (!w.sparse_on) f.appendChild(el('span', 'note', 'no sparse part'));
    else {
      var ft = el('table');
      w.features.forEach(function (x) {
        var r = el('tr'); r.appendChild(el('td', null, x.name));
        var c = el('td'), bb = el('span', 'bar' + (x.weight < 0 ? ' neg' : ''));
        bb.style.width = Math.min(80, Math.round(40 * Math.abs(x.weight))) + 'px'; c.appendChild(bb); r.appendChild(c);
        r.appendChild(el('td', 'num', num(x.weight))); ft.appendChild(r);
      });
      f.appendChild(ft);
      if (w.n_features > w.features.length) f.appendChild(el('div', 'note', (w.n_features - w.features.length) + ' more features'));
    }
    tr.appendChild(f); t.appendChild(tr);
  });
  root.appendChild(t);
}
