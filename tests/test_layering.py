"""The include rules of the tree (Makefile.am's include lists, as a test): every
#include "..." of a folder's sources names a header (or X-macro list, .def) of that
folder or of one it may see, and no include cycle spans more than two files (a header and its source, or a
pair of private headers). Prints TAP."""
import os
import re
import sys

TOP = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(__file__), "..")

# Each folder and the folders it may include, lowest first: a folder sees itself and
# what it lists, never a folder listed after it.
BELOW = {}
ORDER = [
    ("common", []),
    ("codelets/cpu", ["common"]),
    ("codelets/cuda", ["codelets/cpu"]),
    ("codelets", ["codelets/cuda"]),
    ("models", ["common"]),
    ("src/formats", ["common"]),
    ("src/sampling", ["common"]),
    ("src/checkpoint", ["models", "src/formats", "src/sampling"]),
    ("src/runtime", ["codelets"]),
    ("src/store", ["src/checkpoint"]),
    ("tasks", ["codelets", "models"]),
    ("src/plan", ["tasks", "src/runtime", "src/store"]),
    ("src/obs", ["src/runtime", "src/store"]),
    ("src/app", ["src/plan", "src/obs"]),
    ("src/cli", ["src/app"]),
]
# Includes that run back up, each with the file that makes it. A new one fails; one
# that goes away must leave this list.
KNOWN_BREAKS = set()
# generated headers (config.h, common/dit_version.h from configure)
GENERATED = {"config.h": "common", "dit_version.h": "common"}


def closure():
    seen = {}
    for folder, below in ORDER:
        s = {folder}
        for b in below:
            s |= seen[b]
        seen[folder] = s
    return seen


def sources(folder):
    d = os.path.join(TOP, folder)
    return sorted(f for f in os.listdir(d)
                  if f.endswith((".c", ".h", ".cu", ".cuh", ".def"))
                  and os.path.isfile(os.path.join(d, f)))


def main():
    sees = closure()
    home = dict(GENERATED)
    files, twice = {}, []
    for folder, _ in ORDER:
        for f in sources(folder):
            if f.endswith((".h", ".cuh", ".def")):
                if f in home and home[f] != folder:
                    twice.append(f"{f} is in both {home[f]} and {folder}")
                home[f] = folder
            files[f"{folder}/{f}"] = folder
    bad, used_breaks, edges = list(twice), set(), {}
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for path, folder in files.items():
        text = open(os.path.join(TOP, path), encoding="utf-8", errors="replace").read()
        mod = os.path.splitext(path)[0]
        for h in inc.findall(text):
            h = os.path.basename(h)
            where = home.get(h)
            if where is None:
                bad.append(f"{path}: includes {h}, a header of no folder")
                continue
            if where not in sees[folder]:
                if (path, h) in KNOWN_BREAKS:
                    used_breaks.add((path, h))
                else:
                    bad.append(f"{path}: includes {where}/{h}, above {folder}")
            if where != "common" or h not in GENERATED:
                target = os.path.splitext(f"{where}/{h}")[0]
                if target != mod:
                    edges.setdefault(mod, set()).add(target)
    n = 0
    print("1..4")
    n += 1
    print(("ok" if not bad else "not ok") + f" {n} - every include is of the folder or below it, every header in one folder")
    for b in bad:
        print("#   " + b)
    n += 1
    stale = KNOWN_BREAKS - used_breaks
    print(("ok" if not stale else "not ok") + f" {n} - the known breaks are still there")
    for s in sorted(stale):
        print(f"#   {s[0]} no longer includes {s[1]}: take it off KNOWN_BREAKS")
    n += 1
    cycles = [c for c in scc(edges) if len(c) > 2]
    print(("ok" if not cycles else "not ok") + f" {n} - no include cycle over two files")
    for c in cycles:
        print("#   " + " ".join(sorted(c)))
    n += 1
    wrong = public_api(inc, home)
    print(("ok" if not wrong else "not ok") + f" {n} - the installed headers include only installed headers, and the command only them and its own")
    for w in wrong:
        print("#   " + w)
    return 0


def installed():
    """The installed headers: pkginclude_HEADERS of Makefile.am, and the generated
    version header."""
    text = open(os.path.join(TOP, "Makefile.am"), encoding="utf-8").read()
    m = re.search(r"^pkginclude_HEADERS\s*=((?:.*\\\n)*.*)$", text, re.M)
    names = re.findall(r"([\w/.-]+\.h)", m.group(1)) if m else []
    return {os.path.basename(h): h for h in names} | {"dit_version.h": "common/dit_version.h"}


def public_api(inc, home):
    """The command is a program on the library's public interface: src/cli's files
    include the installed headers and src/cli's own; an installed header includes
    installed headers alone (what make install puts there must compile there)."""
    pub, wrong = installed(), []
    for h, path in sorted(pub.items()):
        full = os.path.join(TOP, path if os.path.exists(os.path.join(TOP, path)) else path + ".in")
        for i in inc.findall(open(full, encoding="utf-8").read()):
            if os.path.basename(i) not in pub:
                wrong.append(f"{path} (installed): includes {i}, which is not installed")
    for f in sources("src/cli"):
        if f == "ditstar_models_check.c":  # a maintainer's tool beside the command
            continue
        for i in inc.findall(open(os.path.join(TOP, "src/cli", f), encoding="utf-8").read()):
            i = os.path.basename(i)
            if i not in pub and home.get(i) != "src/cli":
                wrong.append(f"src/cli/{f}: includes {i}, not an installed header")
    return wrong


def scc(edges):
    """Strongly connected components of the include graph (files without extension:
    a header and its source are one node), Tarjan's, iterative."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {w for v in edges.values() for w in v}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                out.append(comp)
    return out


if __name__ == "__main__":
    sys.exit(main())
