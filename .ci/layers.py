#!/usr/bin/env python3
"""The source's shape, checked: no import cycle between modules, no function over MAX_FN lines,
no file over MAX_FILE lines of non-test code (docs/architecture.md, "Rules").

usage: python3 .ci/layers.py [SRC_DIR]      (default: src; exit 1 on any finding)

Modules are the files under src (a `foo.rs` and its `foo/` children are separate modules). An
edge A -> B is any `crate::B...` path named in A's non-test code (`use` lines and inline paths);
`super::` is resolved against A's own path. A child naming its parent (or any ancestor) is how
Rust submodules reach the items they split out of, and is not counted: a cycle is only between
modules where neither contains the other.
"""
import os
import re
import sys

MAX_FN = 80
MAX_FILE = 500

root = sys.argv[1] if len(sys.argv) > 1 else "src"


def module_of(path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def non_test(text):
    """The file's text up to its `#[cfg(test)]` module, which is always last in this tree."""
    m = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod \w+", text, re.M)
    return text[: m.start()] if m else text


files = {}
for d, _, names in os.walk(root):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(d, n)
            with open(p, encoding="utf-8") as f:
                files[p] = non_test(f.read())
mods = {module_of(p): p for p in files}


def resolve(parts):
    """The longest known module prefix of a path's segments."""
    for k in range(len(parts), 0, -1):
        if tuple(parts[:k]) in mods:
            return tuple(parts[:k])
    return None


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


edges = {m: set() for m in mods}
path_re = re.compile(r"\b(crate|super)((?:::\w+)+)")
group_re = re.compile(r"\b(crate|super)((?:::\w+)*)::\{([^;]*?)\};", re.S)
for m, p in mods.items():
    code = strip_comments(files[p])
    targets = []
    for base, head, body in group_re.findall(code):
        for item in re.split(r",", re.sub(r"\{[^{}]*\}", "", body)):
            item = item.strip().split(" as ")[0]
            if item and item != "self":
                targets.append((base, head + "::" + item))
            elif item == "self":
                targets.append((base, head))
    for base, tail in path_re.findall(code):
        targets.append((base, tail))
    for base, tail in targets:
        segs = [s for s in tail.split("::") if s]
        if base == "crate":
            full = segs
        else:
            # `super` is the parent module, for `a/b.rs` and `a/b/mod.rs` alike.
            full = list(m[:-1])
            while segs and segs[0] == "super":
                full, segs = full[:-1], segs[1:]
            full += segs
        t = resolve(full)
        if t is None or t == m:
            continue
        if m[: len(t)] == t or t[: len(m)] == m:
            continue  # ancestor or descendant
        edges[m].add(t)

# Strongly connected components (Tarjan, iterative enough for this tree's size).
index, low, on, stack, sccs = {}, {}, set(), [], []
sys.setrecursionlimit(10000)


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(comp)


for v in sorted(mods):
    if v not in index:
        visit(v)

name = lambda m: "::".join(m) or "crate"
problems = 0
for comp in sccs:
    problems += 1
    comp = sorted(comp)
    print(f"cycle: {', '.join(name(c) for c in comp)}")
    for a in comp:
        for b in sorted(edges[a] & set(comp)):
            print(f"    {name(a)} -> {name(b)}")

fn_re = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?fn\s+(\w+)", re.M)
for p in sorted(files):
    text = files[p]
    lines = text.split("\n")
    code_lines = len(lines)
    if code_lines > MAX_FILE:
        problems += 1
        print(f"file: {p}: {code_lines} lines of non-test code (at most {MAX_FILE})")
    for fm in fn_re.finditer(text):
        indent = fm.group(1)
        start = text.count("\n", 0, fm.start())
        # The body ends at the first later line that closes at the fn's own indentation.
        end = None
        for i in range(start + 1, len(lines)):
            if lines[i].startswith(indent + "}") and not lines[i].startswith(indent + "} "):
                end = i
                break
            if lines[i].rstrip() == indent + "}":
                end = i
                break
        if end is None:
            continue
        if ";" in lines[start] and "{" not in lines[start]:
            # A declaration without a body (a trait method) spans no lines.
            if not any("{" in l for l in lines[start:start + 3]):
                continue
        n = end - start + 1
        if n > MAX_FN:
            problems += 1
            print(f"function: {p}:{start + 1}: {fm.group(2)} is {n} lines (at most {MAX_FN})")

print(f"{len(mods)} modules, {sum(len(e) for e in edges.values())} edges, {problems} findings")
sys.exit(1 if problems else 0)
