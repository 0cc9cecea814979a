#!/usr/bin/env python3
"""The source's shape, checked (docs/architecture.md, "Rules"): no import cycle between modules,
nor between top-level modules (folders: `backend` is every module under src/backend), no function
over MAX_FN lines, no file over MAX_FILE lines of non-test code, and every source path that
docs/architecture.md names exists.

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

# Strongly connected components (Tarjan).
sys.setrecursionlimit(10000)


def cycles(graph):
    """The strongly connected components of more than one node of `graph` (node -> successors)."""
    index, low, on, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


name = lambda m: "::".join(m) or "crate"
problems = 0
for comp in cycles(edges):
    problems += 1
    print(f"cycle: {', '.join(name(c) for c in comp)}")
    for a in comp:
        for b in sorted(edges[a] & set(comp)):
            print(f"    {name(a)} -> {name(b)}")

# The same at folder level: an edge between two top-level modules for every edge between
# modules under them.
folders = {}
for a, targets in edges.items():
    for b in targets:
        if a and b and a[0] != b[0]:
            folders.setdefault((a[0],), set()).add((b[0],))
for comp in cycles(folders):
    problems += 1
    print(f"folder cycle: {', '.join(name(c) for c in comp)}")
    members = {c[0] for c in comp}
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a and b and a[0] != b[0] and a[0] in members and b[0] in members:
                print(f"    {name(a)} -> {name(b)}")

# Every path docs/architecture.md names in backquotes (`spec/dml.rs`, `backend/cpu/`,
# `dxdispatch/{mod,exec}.rs`, `app.rs`) is a file or folder of the repository, named from the
# repository's root, from src/, or as the tail of a path (`run/compute.rs` under src/container/),
# so the map cannot point at files that moved.
repo = os.path.dirname(os.path.abspath(root))
arch = os.path.join(repo, "docs", "architecture.md")
known = set()
for d, dirs, names in os.walk(repo):
    dirs[:] = [x for x in dirs if x not in ("target", ".git", "node_modules")]
    rel = os.path.relpath(d, repo).replace(os.sep, "/")
    for n in dirs + names:
        known.add(n if rel == "." else f"{rel}/{n}")


def expand(token):
    m = re.search(r"\{([^{}]*)\}", token)
    if not m:
        return [token]
    return [x for alt in m.group(1).split(",") for x in expand(token[: m.start()] + alt + token[m.end():])]


def exists(path):
    path = path.rstrip("/")
    if "*" in path:
        import fnmatch
        return any(fnmatch.fnmatch(k, path) or fnmatch.fnmatch(k, "src/" + path) for k in known)
    # A module may be named without its `.rs` (`container/{npz,pairs}`).
    return any(p in known or ("src/" + p) in known or any(k.endswith("/" + p) for k in known)
               for p in (path, path + ".rs"))


if os.path.exists(arch):
    with open(arch, encoding="utf-8") as f:
        text = f.read()
    tokens = set(re.findall(r"`([\w.{},*-]+(?:/[\w.{},*-]*)+|[\w-]+\.(?:rs|py|md|wgsl|toml))`", text))
    for token in sorted(tokens):
        for path in expand(token):
            if not exists(path):
                problems += 1
                print(f"docs/architecture.md names `{path}`, which is not in the repository")

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
