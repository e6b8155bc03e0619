#!/usr/bin/python3
"""Only the API is exported: the shared library's dynamic symbols are the functions of the public headers.

Usage: check_exports.py NM LIBRARY HEADER [INCLUDE_DIR...]

HEADER is the umbrella pocketdec.h; its #include "..." lines are followed (in HEADER's folder, then in each
INCLUDE_DIR), so it works on the source tree and on an installed prefix alike. Every function declared at file
scope in those headers must be marked PD_API, and the set of those functions must equal the set of symbols of
`NM -D --defined-only LIBRARY` (names the toolchain reserves, those starting with "_", aside).
Prints what differs and exits non-zero when anything does.
"""
import os
import re
import subprocess
import sys


def header_text(path, dirs, seen):
    """path's text followed by the text of each header it includes with quotes, once each."""
    if path in seen:
        return ""
    seen.add(path)
    text = open(path, encoding="utf-8").read()
    parts = [text]
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
        for d in [os.path.dirname(path)] + dirs:
            candidate = os.path.join(d, name)
            if os.path.exists(candidate):
                parts.append(header_text(os.path.abspath(candidate), dirs, seen))
                break
        else:
            sys.exit(f"check_exports: {path} includes \"{name}\", found in none of {[os.path.dirname(path)] + dirs}")
    return "\n".join(parts)


def declared_functions(text):
    """{name: marked with PD_API} for every function declared at file scope."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)  # preprocessor lines
    text = text.replace('extern "C" {', " ")
    text = re.sub(r"^\}\s*$", " ", text, flags=re.M)  # the closing brace of extern "C"
    while True:  # struct and enum bodies, innermost first
        flat = re.sub(r"\{[^{}]*\}", " ", text)
        if flat == text:
            break
        text = flat
    out = {}
    for statement in text.split(";"):
        statement = " ".join(statement.split())
        if not statement or statement.startswith("typedef") or "(" not in statement:
            continue
        name = re.search(r"(\w+)\s*\(", statement).group(1)
        out[name] = statement.startswith("PD_API ")
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    nm, library, header, dirs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    declared = declared_functions(header_text(os.path.abspath(header), dirs, set()))
    listing = subprocess.run([nm, "-D", "--defined-only", library], check=True, capture_output=True, text=True)
    exported = {line.split()[-1].split("@")[0] for line in listing.stdout.splitlines() if line.strip()}
    exported = {name for name in exported if not name.startswith("_")}

    unmarked = sorted(name for name, marked in declared.items() if not marked)
    hidden = sorted(set(declared) - exported)
    extra = sorted(exported - set(declared))
    for title, names in (("declared without PD_API", unmarked), ("declared but not exported", hidden),
                         ("exported but not declared in the public headers", extra)):
        if names:
            print(f"{title} ({len(names)}): {' '.join(names)}")
    print(f"{len(declared)} public functions declared, {len(exported)} symbols exported")
    sys.exit(1 if unmarked or hidden or extra else 0)


main()
