#!/usr/bin/python3
"""Keep the documents true to the code (suite 'config' and 'style').

usage: check_docs.py [--keys TEST_CONFIG_KEYS] SOURCE_ROOT

1. Configuration keys: docs/configuration.md's key tables and shaper.json(5)'s
   key entries list exactly the keys of the parser's key table
   (src/config/config_keys.c, printed by `test_config_keys --dump`), each
   with the table's default. Keys of small nested objects (bandwidth's
   bounds, control.sockets, dataplane.mbufs, ports) must be named in their
   parent's entry.
2. Drop reasons: docs/ARCHITECTURE.md's drop reason table lists exactly the
   reasons of SHAPER_DROP_REASONS in include/shaper/sched.h, and
   docs/control-protocol.md's drop_reasons row names each of them.
3. No path outside the repository (/work/..., ../shared, a design note) and
   no issue number ("issue 17", "issue #5", "§4.1") in docs, config files,
   or the comments and docstrings of code and tests: a user has neither.

Exit 0 = all true, 1 = a difference (each printed).
"""
import argparse
import io
import os
import re
import subprocess
import sys
import tokenize

# docs/configuration.md heading -> key table section.
MD_SECTIONS = {
    "## Top level": "top",
    "## ports": "port",
    "### Keys for every discipline": "dir",
    "#### emulate": "emulate",
    "#### autorate": "autorate",
    "### cake": "dir.cake",
    "### fq_codel": "dir.fq_codel",
    "### fifo": "dir.fifo",
    "## control": "control",
    "## metrics": "metrics",
    "## log": "log",
    "## lcores": "lcores",
    "## dataplane": "dataplane",
    "## fail_open": "fail_open",
    "## subscribers": "subscribers",
}
# shaper.json(5) .SH/.SS title -> section.
MAN_SECTIONS = {
    "PORTS": "port",
    "Every discipline": "dir",
    "emulate": "emulate",
    "autorate": "autorate",
    "cake": "dir.cake",
    "fq_codel": "dir.fq_codel",
    "fifo": "dir.fifo",
    "CONTROL": "control",
    "METRICS": "metrics",
    "LOG": "log",
    "LCORES": "lcores",
    "DATAPLANE": "dataplane",
    "FAIL-OPEN": "fail_open",
    "SUBSCRIBERS": "subscribers",
}
# Sections documented inside their parent key's entry: (parent section, parent key).
INLINE = {
    "ports": ("top", "ports"),
    "control.sockets": ("control", "sockets"),
    "dataplane.mbufs": ("dataplane", "mbufs"),
}

errors = []


def err(msg):
    errors.append(msg)


def unquote(tok):
    tok = tok.strip()
    if tok.startswith("`") and tok.endswith("`") and len(tok) >= 2:
        tok = tok[1:-1]
    if tok.startswith('"') and tok.endswith('"') and len(tok) >= 2:
        tok = tok[1:-1]
    return tok


def load_keys(exe):
    out = subprocess.run([exe, "--dump"], check=True, capture_output=True, text=True).stdout
    keys = []
    for line in out.splitlines():
        section, key, has_doc, doc = line.split("\t")
        keys.append((section, key, doc if has_doc == "1" else None))
    return keys


# ---------------------------------------------------------------- configuration.md

def md_blocks(text):
    """{heading line: the text under it up to the next heading of any level}."""
    blocks, cur, buf = {}, None, []
    for line in text.splitlines():
        if re.match(r"#{1,6} ", line):
            if cur is not None:
                blocks.setdefault(cur, "\n".join(buf))
            cur, buf = line.strip(), []
        else:
            buf.append(line)
    if cur is not None:
        blocks.setdefault(cur, "\n".join(buf))
    return blocks


def md_cells(line):
    # Split on | outside backticks.
    cells, cur, tick = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            tick = not tick
        if ch == "|" and not tick:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
    cells.append(cur.strip())
    return cells


def md_key_table(block):
    """Rows of the first table whose first column is "key": [(keys, default or None, row)]."""
    lines = block.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and md_cells(line)[0] == "key":
            head = md_cells(line)
            has_default = head[-1] == "default"
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = md_cells(row)
                keys = re.findall(r"`([^`]+)`", cells[0])
                rows.append((keys, cells[-1] if has_default else None, row))
            return rows
    return None


def md_default_token(cell):
    cell = cell.strip()
    if cell.startswith("`"):
        end = cell.find("`", 1)
        return unquote(cell[:end + 1])
    return unquote(re.split(r"[\s,:;(]", cell, maxsplit=1)[0])


def check_md(path, keys):
    text = open(path, encoding="utf-8").read()
    blocks = md_blocks(text)
    rows_of = {}
    for heading, section in MD_SECTIONS.items():
        if heading not in blocks:
            err("%s: no heading %r (the key table of section %s)" % (path, heading, section))
            continue
        rows = md_key_table(blocks[heading])
        if rows is None:
            err("%s: %r has no table with a \"key\" column" % (path, heading))
            continue
        rows_of[section] = rows
    for section, rows in rows_of.items():
        documented = {}
        for ks, default, row in rows:
            for k in ks:
                documented[k] = (default, row)
        expected = {k: doc for s, k, doc in keys if s == section}
        for k in sorted(set(documented) - set(expected)):
            err("%s: %s lists `%s`, which the parser's key table (%s) does not have"
                % (path, section, k, "src/config/config_keys.c"))
        for k in sorted(set(expected) - set(documented)):
            err("%s: %s does not document `%s`" % (path, section, k))
        for k, doc in expected.items():
            if k not in documented or doc is None or documented[k][0] is None:
                continue
            got = md_default_token(documented[k][0])
            if got != doc:
                err("%s: %s `%s`: the docs' default is %r, the code's %r" % (path, section, k, got, doc))
    for section, (psec, pkey) in INLINE.items():
        row = next((r for ks, _, r in rows_of.get(psec, []) if pkey in ks), None)
        if row is None:
            err("%s: no row for `%s` in %s, where %s's keys are described" % (path, pkey, psec, section))
            continue
        for s, k, _ in keys:
            if s == section and not re.search(r'[`"]%s[`"]' % re.escape(k), row):
                err("%s: the `%s` row does not name its key `%s`" % (path, pkey, k))


# ---------------------------------------------------------------- shaper.json(5)

def roff_args(rest):
    args, cur, quoted, i = [], "", False, 0
    while i < len(rest):
        ch = rest[i]
        if quoted and ch == '"' and rest[i + 1:i + 2] == '"':
            cur += '"'
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == " " and not quoted:
            if cur:
                args.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if cur:
        args.append(cur)
    return args


def roff_text(lines):
    out = []
    for line in lines:
        if line.startswith("."):
            macro, _, rest = line[1:].partition(" ")
            if macro in ("B", "I"):
                out.append(" ".join(roff_args(rest)))
            elif macro in ("BR", "RB", "IR", "RI", "BI", "IB"):
                out.append("".join(roff_args(rest)))
        else:
            out.append(line)
    text = " ".join(out)
    for a, b in (("\\-", "-"), ("\\(dq", '"'), ("\\fB", ""), ("\\fR", ""), ("\\fI", ""),
                 ("\\(em", "-"), ("\\e", "\\")):
        text = text.replace(a, b)
    return text


def man_sections(text):
    """{title: [lines]} for every .SH and .SS."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'\.S[HS] "?([^"]*)"?$', line)
        if m:
            cur = m.group(1).strip()
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def man_entries(lines):
    """{key: entry text} for each .TP whose tag line is .B key (or .BR key ...)."""
    entries, i = {}, 0
    while i < len(lines):
        if lines[i].startswith(".TP") and i + 1 < len(lines):
            m = re.match(r"\.BR? (\S+)", lines[i + 1])
            j = i + 2
            while j < len(lines) and not re.match(r"\.(TP|PP|SH|SS)\b", lines[j]):
                j += 1
            if m:
                entries[roff_text([".B " + m.group(1)]).strip()] = roff_text(lines[i + 2:j])
            i = j
        else:
            i += 1
    return entries


def check_man(path, keys):
    secs = man_sections(open(path, encoding="utf-8").read())
    entries_of = {}
    for title, section in MAN_SECTIONS.items():
        if title not in secs:
            err("%s: no section %r (the keys of %s)" % (path, title, section))
            continue
        entries_of[section] = man_entries(secs[title])
    for section, entries in entries_of.items():
        expected = {k: doc for s, k, doc in keys if s == section}
        for k in sorted(set(entries) - set(expected)):
            err("%s: %s has an entry for %s, which the parser's key table does not have" % (path, section, k))
        for k in sorted(set(expected) - set(entries)):
            err("%s: %s does not document %s" % (path, section, k))
        for k, doc in expected.items():
            if k not in entries or doc is None:
                continue
            m = re.search(r"\b[Dd]efault:?\s+(\S+)", entries[k])
            if m is None:
                err("%s: %s %s: no \"default X\" (the code's default is %r)" % (path, section, k, doc))
                continue
            got = unquote(m.group(1).rstrip(".,;:)"))
            if got != doc:
                err("%s: %s %s: the page's default is %r, the code's %r" % (path, section, k, got, doc))
    for section, (psec, pkey) in INLINE.items():
        if psec == "top":
            text = roff_text(secs.get("DESCRIPTION", [])) + roff_text(secs.get("PORTS", []))
        else:
            text = entries_of.get(psec, {}).get(pkey)
        if text is None:
            err("%s: no entry for %s in %s, where %s's keys are described" % (path, pkey, psec, section))
            continue
        for s, k, _ in keys:
            if s == section and not re.search(r"\b%s\b" % re.escape(k), text):
                err("%s: the %s entry does not name its key %s" % (path, pkey, k))


# ---------------------------------------------------------------- drop reasons

def check_drops(root):
    hdr = open(os.path.join(root, "include/shaper/sched.h"), encoding="utf-8").read()
    body = hdr[hdr.index("#define SHAPER_DROP_REASONS(X)"):]
    body = body[:body.index("\n\n")]
    reasons = re.findall(r'X\(\s*\w+\s*,\s*"([^"]+)"', body)
    if not reasons:
        err("include/shaper/sched.h: SHAPER_DROP_REASONS not found")
        return
    arch = open(os.path.join(root, "docs/ARCHITECTURE.md"), encoding="utf-8").read().splitlines()
    listed, in_table = [], False
    for line in arch:
        if line.startswith("| name | set by | meaning |"):
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                break
            m = re.match(r"\| `([^`]+)` \|", line)
            if m:
                listed.append(m.group(1))
    if not in_table:
        err("docs/ARCHITECTURE.md: no drop reason table (| name | set by | meaning |)")
    for r in sorted(set(reasons) - set(listed)):
        err("docs/ARCHITECTURE.md: the drop reason table lacks `%s` (SHAPER_DROP_REASONS)" % r)
    for r in sorted(set(listed) - set(reasons)):
        err("docs/ARCHITECTURE.md: the drop reason table lists `%s`, not in SHAPER_DROP_REASONS" % r)
    proto = open(os.path.join(root, "docs/control-protocol.md"), encoding="utf-8").read()
    row = next((l for l in proto.splitlines() if l.startswith("| `drops`, `drop_reasons` |")), None)
    if row is None:
        err("docs/control-protocol.md: no `drops`, `drop_reasons` row")
        return
    for r in reasons:
        if "`%s`" % r not in row:
            err("docs/control-protocol.md: the drop_reasons row does not name `%s`" % r)


# ---------------------------------------------------------------- outside paths, issue numbers

OUTSIDE = [
    (re.compile(r"(?<![\w.~-])/work/"), "a path on the developers' machines"),
    (re.compile(r"\.\./shared\b|\bshared/(?:design|tools)\b"), "a path outside the repository"),
    (re.compile(r"\b(?:cake-reference|TESTBED|STYLE|style-and-ecosystem)\.md\b"), "a design note outside the repository"),
    (re.compile(r"\b(?:in|from|of) the design note\b"), "a design note outside the repository"),
    (re.compile(r"\b[Ii]ssues?[\s-]+#?\d+"), "an issue number"),
    (re.compile(r"(?<![\w&/])#\d+\b"), "an issue number"),
    (re.compile(r"§\s*\d"), "a section of a design note"),
    (re.compile(r"\b[Tt]he issue(?:'s)?\b"), "a reference to an issue"),
]
DOC_EXT = (".md", ".5", ".8", ".json", ".txt", ".service", ".conf")
SKIP = ("tests/fuzz/corpus/", "tests/config/check_docs.py")


def c_comments(text):
    # Comments only: strings (which may hold "/*" or "//") are stepped over.
    for m in re.finditer(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', text, re.S):
        if m.group(0)[0] == "/":
            yield m.start(), m.group(0)


def py_comments(text):
    lines = text.splitlines(keepends=True)
    offs = [0]
    for l in lines:
        offs.append(offs[-1] + len(l))
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT or (
                    tok.type == tokenize.STRING and re.match(r'[rRbBuUfF]*("""|\'\'\')', tok.string)):
                yield offs[tok.start[0] - 1] + tok.start[1], tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        yield 0, text


def hash_comments(text):
    for m in re.finditer(r"(?:^|(?<=\s))#[^\n]*", text):
        yield m.start(), m.group(0)


def pieces(path, text):
    if path.endswith(DOC_EXT) or "/" not in path and path.startswith("README"):
        return [(0, text)]
    if path.endswith((".c", ".h", ".lua")):
        return list(c_comments(text))
    if path.endswith(".py"):
        return list(py_comments(text))
    if path.endswith((".sh", ".build", ".txt", ".options")) or os.path.basename(path) in (
            "meson_options.txt", "Dockerfile") or text.startswith("#!"):
        return list(hash_comments(text))
    return []


def check_outside(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "README.md", "docs", "man", "config",
                            "src", "include", "tests", "tools", "dist", "docker"],
                           check=True, capture_output=True, text=True).stdout.split()
    for f in files:
        if f.startswith(SKIP):
            continue
        try:
            text = open(os.path.join(root, f), encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        for off, piece in pieces(f, text):
            for pat, what in OUTSIDE:
                for m in pat.finditer(piece):
                    line = text.count("\n", 0, off + m.start()) + 1
                    err("%s:%d: %s: %r" % (f, line, what, m.group(0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", help="test_config_keys (prints the key table with --dump)")
    ap.add_argument("root")
    args = ap.parse_args()
    if args.keys:
        keys = load_keys(args.keys)
        check_md(os.path.join(args.root, "docs/configuration.md"), keys)
        check_man(os.path.join(args.root, "man/shaper.json.5"), keys)
    check_drops(args.root)
    check_outside(args.root)
    for e in errors:
        print(e)
    print("%d difference(s)" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
