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
4. shaper.json(5)'s list of top-level keys names every key of the key
   table's top level.
5. The SYNOPSIS of shaperd(8) and shapectl(8) against the option parsers
   (struct option in src/shaperd.c and tools/shapectl/shapectl.c): every
   option is in the SYNOPSIS (--help and --version at least under OPTIONS)
   and has an entry under OPTIONS, and the pages name no option the parser
   lacks.
6. The commands against src/control/protocol.c's table: one section per
   command in docs/control-protocol.md; each command in the row of its
   access level in docs/configuration.md and in shaper.json(5)'s
   control.level; protocol.c's unknown-command message and shapectl's list
   every command; a list of commands in prose ("the commands `version`,
   ...") names all of them; a count in prose ("8 commands", "six drop
   reasons") is the table's.
7. The keys a reload cannot apply (restart_key() in src/control/reload.c):
   docs/configuration.md's table names each of them and no other section;
   a list of them in prose (after "restart", in parentheses, between dashes
   or after a colon) names every section.
8. No word of how the project is developed (helpers, the lead, round N,
   the brief, a reviewer, goals) in README.md, docs, man pages, config
   files and the unit.
9. docs/configuration.md's tables of examples and presets name every
   config/*.json, and no file that is not there.
10. One version everywhere: meson.build's project version is NEWS.md's
   newest entry, debian/changelog's top entry and the version in the man
   pages' title lines.

SOURCE_ROOT may be a copy of the tree without git (e.g. to plant an error):
its files are then walked instead of listed by git.

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
    "ports.single": ("top", "ports"),
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


TREE = ("README.md", "docs", "man", "config", "src", "include", "tests", "tools", "dist", "docker")


def tree_files(root, tops=TREE):
    """The tracked files under tops, or every file there if root is no git work tree."""
    r = subprocess.run(["git", "-C", root, "ls-files", *tops], capture_output=True, text=True)
    if r.returncode == 0 and os.path.isdir(os.path.join(root, ".git")):
        return r.stdout.split()
    out = []
    for top in tops:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            out.append(top)
        for d, _, names in os.walk(path):
            out += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(out)


def check_outside(root):
    for f in tree_files(root):
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


# ---------------------------------------------------------------- helpers for the checks below

def read(root, rel):
    return open(os.path.join(root, rel), encoding="utf-8").read()


def man_plain(text):
    """A man page as running text (macros' arguments kept, escapes undone)."""
    text = text.replace("\\(em", " \u2014 ")
    return roff_text(text.splitlines())


WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}


def count_value(tok):
    tok = tok.lower()
    return int(tok) if tok.isdigit() else WORDS.get(tok)


def prose_files(root):
    """(path, running text) of the README, docs, man pages and the unit file."""
    out = []
    for f in tree_files(root, ("README.md", "docs", "man", "dist")):
        if f.endswith(".md") or f.endswith(".service.in"):
            out.append((f, read(root, f)))
        elif re.search(r"\.[1-8]$", f):
            out.append((f, man_plain(read(root, f))))
    return out


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


# ---------------------------------------------------------------- 4. top-level keys in shaper.json(5)

def check_man_top(root, keys):
    path = "man/shaper.json.5"
    desc = man_plain("\n".join(man_sections(read(root, path)).get("DESCRIPTION", [])))
    m = re.search(r"keys of the top-level object are(.*?)\bwhich is ignored", desc, re.S)
    if m is None:
        err("%s: DESCRIPTION has no \"The keys of the top-level object are ...\"" % path)
        return
    listed = m.group(1)
    for s, k, _ in keys:
        if s == "top" and not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(k), listed):
            err("%s: the list of top-level keys lacks %s (the key table's top level)" % (path, k))


# ---------------------------------------------------------------- 5. SYNOPSIS against the parsers

def parser_options(root, rel, array, after):
    src = read(root, rel)
    at = src.find(after)
    m = re.compile(r"struct option %s\[\] = \{(.*?)\};" % array, re.S).search(src, max(at, 0))
    if m is None:
        err("%s: no struct option %s[]" % (rel, array))
        return {}
    opts = {}
    for name, val in re.findall(r'\{\s*"([a-z-]+)",\s*\w+,\s*NULL,\s*\'(.)\'\s*\}', m.group(1)):
        opts[name] = val
    short = re.search(r'getopt_long\(argc, argv, "([^"]*)", %s' % array, src)
    letters = set(re.sub(r"[^A-Za-z]", "", short.group(1))) if short else set()
    return {n: ("-" + v if v in letters else None) for n, v in opts.items()}


def check_synopsis(root, page, rel, array, after, options_title):
    opts = parser_options(root, rel, array, after)
    if not opts:
        return
    secs = man_sections(read(root, page))
    syn = man_plain("\n".join(secs.get("SYNOPSIS", [])))
    optsec = man_plain("\n".join(secs.get(options_title, [])))
    if not syn or not optsec:
        err("%s: no SYNOPSIS or no %r section" % (page, options_title))
        return
    for name, short in sorted(opts.items()):
        forms = ["--" + name] + ([short] if short else [])
        has = lambda text: any(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(f), text) for f in forms)
        if not has(syn) and name not in ("help", "version"):
            shown = forms[-1] if short and name == "config" else forms[0]
            err("%s: SYNOPSIS lacks %s, which %s parses" % (page, shown, rel))
        if not has(optsec):
            err("%s: %s has no entry for --%s, which %s parses" % (page, options_title, name, rel))
    for text, where in ((syn, "SYNOPSIS"), (optsec, options_title)):
        for o in sorted(set(re.findall(r"(?<![\w-])--([a-z][a-z-]*)", text))):
            if o not in opts:
                err("%s: %s names --%s, which %s does not parse" % (page, where, o, rel))


# ---------------------------------------------------------------- 6. commands and access levels

def load_commands(root):
    src = read(root, "src/control/protocol.c")
    m = re.search(r"\} commands\[\] = \{(.*?)\n\};", src, re.S)
    cmds = re.findall(r'\{\s*"([a-z.]+)",\s*\w+,\s*SHAPER_LEVEL_(\w+)(?:,\s*(?:true|false))?\s*\}',
                      m.group(1)) if m else []
    if not cmds:
        err("src/control/protocol.c: the command table was not found")
    return [(n, l.lower()) for n, l in cmds]


def shapectl_commands(root):
    src = read(root, "tools/shapectl/shapectl.c")
    m = re.search(r"\} commands\[\] = \{(.*?)\n\};", src, re.S)
    return re.findall(r'\{\s*"([a-z]+)",\s*C_\w+\s*\}', m.group(1)) if m else []


def name_re(names):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


def names_in(text, names):
    return set(re.findall(r"(?<![\w.])(%s)(?![\w]|\.\w)" % name_re(names), text))


def check_commands(root, cmds):
    names = [n for n, _ in cmds]
    level = dict(cmds)
    # control-protocol.md: a section per command
    proto = read(root, "docs/control-protocol.md")
    heads = re.findall(r"(?m)^### `([a-z.]+)`", proto)
    for n in sorted(set(names) - set(heads)):
        err("docs/control-protocol.md: no \"### `%s`\" section (a command in protocol.c)" % n)
    for n in sorted(set(heads) - set(names)):
        err("docs/control-protocol.md: a section for `%s`, which protocol.c's table lacks" % n)
    # configuration.md: the access level table
    conf = read(root, "docs/configuration.md")
    block = md_blocks(conf).get("### Access levels", "")
    rows = {}
    for line in block.splitlines():
        m = re.match(r"\| `(user|operator|admin)` \|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`([a-z.]+)`", m.group(2))) & set(names)
    if set(rows) != {"user", "operator", "admin"}:
        err("docs/configuration.md: \"### Access levels\" has no row for each of user, operator, admin")
    # Each level includes the ones below: a command is named in its own level's row and in
    # no lower one (a higher row may mention it, as "the addresses ... in `flows`").
    order = ["user", "operator", "admin"]
    for n in names:
        got = [l for l in order if n in rows.get(l, ())]
        if rows and (not got or got[0] != level[n]):
            err("docs/configuration.md: access levels: `%s` is first listed under %s, protocol.c gives it %s"
                % (n, got[0] if got else "no level", level[n]))
    # shaper.json(5): control.level
    man = read(root, "man/shaper.json.5")
    entry = man_entries(man_sections(man).get("CONTROL", [])).get("level", "")
    parts = re.split(r"(?<![\w.])(operator|admin)(?![\w.])\s*\(", " user (" + entry)
    segs = {"user": parts[0]}
    for i in range(1, len(parts) - 1, 2):
        segs.setdefault(parts[i], parts[i + 1])
    if set(segs) != {"user", "operator", "admin"}:
        err("man/shaper.json.5: control level: no \"operator (...)\" and \"admin (...)\" lists")
    else:
        for n in names:
            got = [l for l in order if n in names_in(segs[l], names)]
            if not got or got[0] != level[n]:
                err("man/shaper.json.5: control level: %s is first listed under %s, protocol.c gives it %s"
                    % (n, got[0] if got else "no level", level[n]))
    # the unknown-command messages
    src = read(root, "src/control/protocol.c")
    m = re.search(r'"\\"%s\\" is not a command \(((?:[^)"]|"\s*")*)\)"', src)
    if m is None:
        err("src/control/protocol.c: no unknown-command message listing the commands")
    else:
        listed = [x.strip() for x in re.sub(r'"\s*"', "", m.group(1)).split(",")]
        if listed != names:
            err("src/control/protocol.c: the unknown-command message lists %s; the table has %s"
                % (", ".join(listed), ", ".join(names)))
    sc = shapectl_commands(root)
    m = re.search(r'"\\"%s\\" is not a command \(((?:[^)"]|"\s*")*)\)"',
                  read(root, "tools/shapectl/shapectl.c"))
    if m is None or not sc:
        err("tools/shapectl/shapectl.c: no command table or no message listing the commands")
    else:
        listed = [x.strip() for x in re.sub(r'"\s*"', "", m.group(1)).split(",")]
        if sorted(listed) != sorted(sc):
            err("tools/shapectl/shapectl.c: the not-a-command message lists %s; the table has %s"
                % (", ".join(listed), ", ".join(sc)))
    # prose lists and counts
    item = r"`?(?:%s)`?" % name_re(names)
    run = re.compile(r"%s(?:\s*(?:,|,?\s+and|,?\s+or)\s+%s){3,}" % (item, item))
    for f, text in prose_files(root):
        for m in run.finditer(text):
            before = text[max(0, m.start() - 60):m.start()]
            if re.search(r"\b(?:commands?|requests)\b[^.|]*$", before):
                got = names_in(m.group(0), names)
                missing = [n for n in names if n not in got]
                if missing:
                    err("%s:%d: a list of commands without %s"
                        % (f, line_of(text, m.start()), ", ".join(missing)))
    reasons = drop_reasons(root)
    counts = [(re.compile(r"\b(\w+)\s+(?:control\s+|protocol\s+)?(?:commands|requests)\b"),
               len(names), "commands"),
              (re.compile(r"\b(\w+)\s+drop reasons\b"), len(reasons), "drop reasons")]
    for f, text in prose_files(root):
        for pat, want, what in counts:
            for m in pat.finditer(text):
                v = count_value(m.group(1))
                if v is None or v == want:
                    continue
                before = text[max(0, m.start() - 30):m.start()]
                if what == "commands" and re.search(r"shapectl\S*\s*$", before):
                    if v == len(shapectl_commands(root)):
                        continue
                err("%s:%d: %r, but there are %d %s" % (f, line_of(text, m.start()), m.group(0), want, what))


def drop_reasons(root):
    hdr = read(root, "include/shaper/sched.h")
    i = hdr.find("#define SHAPER_DROP_REASONS(X)")
    body = hdr[i:hdr.index("\n\n", i)] if i >= 0 else ""
    return re.findall(r'X\(\s*\w+\s*,\s*"([^"]+)"', body)


# ---------------------------------------------------------------- 7. the keys a reload cannot apply

# How each restart key's top level is written in prose (a port's device is "ports").
SECTION_WORDS = {
    "ports": r"\bports?\b|\bport's\b",
    "lcores": r"\blcores\b",
    "dataplane": r"\bdataplane\b",
    "control": r"\bcontrol\b",
    "metrics": r"\bmetrics\b",
    "emulate": r"\bemulate\b",
    "fail_open": r"\bfail[_-]open\b",
    "subscribers": r"\bsubscribers\b",
}


def restart_keys(root):
    src = read(root, "src/control/reload.c")
    keys = re.findall(r'restart_key\(pl,\s*"([^"]+)"', src)
    if not keys:
        err("src/control/reload.c: no restart_key() calls found")
    out = []
    for k in keys:
        parts = k.split(".")
        if parts[0] == "%s":  # a direction's key: emulate, bandwidth (autorate bounds), mtu
            out.append(("dir", parts[1]))
        else:
            sub = [p for p in parts[1:] if p != "%s"]
            out.append((parts[0], sub[-1] if sub else None))
    return out


def check_restart_table(root, rkeys):
    path = "docs/configuration.md"
    block = md_blocks(read(root, path)).get("### Reloading and saving the file")
    if block is None:
        err("%s: no \"### Reloading and saving the file\"" % path)
        return
    rows = [md_cells(l)[0] for l in block.splitlines()
            if l.startswith("|") and not l.startswith("|---") and md_cells(l)[0] != "keys"]
    first = " ".join(rows)
    for sec, sub in rkeys:
        if sec == "dir":
            word = {"bandwidth": "autorate", "emulate": "emulate", "mtu": "mtu"}.get(sub, sub)
            if not re.search(r"\b%s\b" % word, first):
                err("%s: the restart table lacks a direction's %s (reload.c: %%s.%s)" % (path, word, sub))
            continue
        row = next((r for r in rows if re.search(r"`%s(?:\.[\w*]+)*`" % re.escape(sec), r)), None)
        if row is None:
            err("%s: the restart table has no row for `%s` (reload.c restarts for %s%s)"
                % (path, sec, sec, "." + sub if sub else ""))
            continue
        if sub is None or "`%s.%s`" % (sec, sub) in row:
            continue
        listed = re.search(r"`%s\.\*`\s*\(([^)]*)\)" % re.escape(sec), row)
        star = re.search(r"`%s\.\*`" % re.escape(sec), row)
        if star and (listed is None or "`%s`" % sub in listed.group(1)):
            continue
        err("%s: the restart table's `%s` row does not name `%s` (reload.c: %s.%s)"
            % (path, sec, sub, sec, sub))
    known = {s for s, _ in rkeys if s != "dir"} | {"upstream", "downstream"}
    for r in rows:
        for top in re.findall(r"`([a-z_]+)(?:\.[\w*]+)*`", r):
            if top not in known and top not in ("mtu", "bandwidth", "min", "max", "start", "device",
                                                "rx_descriptors", "tx_descriptors"):
                if top in SECTION_WORDS or top in ("log",):
                    err("%s: the restart table lists `%s`, which reload.c does not restart for" % (path, top))


def groups(text):
    """(start, text) of parenthesised groups, groups between dashes and from a colon to a full stop."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append((start, text[start:i]))
    for m in re.finditer(r"\u2014([^\u2014]{20,600})\u2014", text):
        out.append((m.start(1), m.group(1)))
    for m in re.finditer(r":\s(.{20,600}?)\.(?:\s|$)", text):
        out.append((m.start(1), m.group(1)))
    return out


def check_restart_prose(root, rkeys):
    sections = sorted({s for s, _ in rkeys if s != "dir"} | {"emulate"})
    for f, text in prose_files(root):
        flat = re.sub(r"\s+", " ", text)
        for start, g in groups(flat):
            hit = [s for s in sections if re.search(SECTION_WORDS.get(s, r"\b%s\b" % s), g)]
            if len(hit) < 4 or not re.search(r"restart", flat[max(0, start - 250):start] + g):
                continue
            missing = [s for s in sections if s not in hit]
            if missing:
                err("%s: a list of the keys a reload cannot apply lacks %s: %r"
                    % (f, ", ".join(missing), g[:80] + ("..." if len(g) > 80 else "")))


# ---------------------------------------------------------------- 8. words about how the project is developed

INTERNAL = [
    (re.compile(r"(?<!inlined )\bhelpers?\b(?! (?:function|program|script)s?\b)", re.I),
     "a helper (of the project's development)"),
    (re.compile(r"\bthe lead\b", re.I), "the lead"),
    (re.compile(r"(?<!--)\brounds? \d+\b|\boptimi[sz]ation rounds?\b", re.I), "a development round"),
    (re.compile(r"\bthe brief\b|\bbriefs\b", re.I), "a brief"),
    (re.compile(r"\breviewers?\b", re.I), "a reviewer"),
    (re.compile(r"\bgoals?\b", re.I), "a goal"),
]


def check_internal(root):
    for f in tree_files(root, ("README.md", "docs", "man", "config", "dist")):
        try:
            text = read(root, f)
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        if not (f.endswith(DOC_EXT) or f == "README.md" or f.endswith(".service.in")):
            continue
        for pat, what in INTERNAL:
            for m in pat.finditer(text):
                err("%s:%d: %s: %r" % (f, line_of(text, m.start()), what, m.group(0)))


# ---------------------------------------------------------------- 9. the presets

def check_presets(root):
    path = "docs/configuration.md"
    conf = read(root, path)
    listed = set(re.findall(r"(?m)^\| `([\w.-]+\.json)` \|", conf))
    there = {f for f in os.listdir(os.path.join(root, "config")) if f.endswith(".json")}
    for f in sorted(there - listed):
        err("%s: config/%s is in no table of examples or presets" % (path, f))
    for f in sorted(listed - there):
        err("%s: the presets list %s, which config/ does not have" % (path, f))


def check_versions(root):
    m = re.search(r"version:\s*'([^']+)'", read(root, "meson.build"))
    if m is None:
        err("meson.build: no project version")
        return
    want = m.group(1)
    news = re.search(r"(?m)^## (\S+)", read(root, "NEWS.md"))
    if news is None or news.group(1) != want:
        err("NEWS.md: the newest entry is %s, meson.build's version %s"
            % (news.group(1) if news else "missing", want))
    deb = re.match(r"shaper \(([^)]+)\)", read(root, "debian/changelog"))
    if deb is None or deb.group(1).split("-")[0] != want:
        err("debian/changelog: the top entry is %s, meson.build's version %s"
            % (deb.group(1) if deb else "missing", want))
    for page in ("man/shaperd.8", "man/shapectl.8", "man/shaper.json.5"):
        th = re.search(r'(?m)^\.TH .*"shaper ([^"]+)"', read(root, page))
        if th is None or th.group(1) != want:
            err("%s: the title line says shaper %s, meson.build's version %s"
                % (page, th.group(1) if th else "nothing", want))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", help="test_config_keys (prints the key table with --dump)")
    ap.add_argument("root")
    args = ap.parse_args()
    if args.keys:
        keys = load_keys(args.keys)
        check_md(os.path.join(args.root, "docs/configuration.md"), keys)
        check_man(os.path.join(args.root, "man/shaper.json.5"), keys)
        check_man_top(args.root, keys)
    check_drops(args.root)
    check_outside(args.root)
    check_synopsis(args.root, "man/shaperd.8", "src/shaperd.c", "opts", "\nparse_app_args(",
                   "shaperd options")
    check_synopsis(args.root, "man/shapectl.8", "tools/shapectl/shapectl.c", "lopts", "\nmain(",
                   "OPTIONS")
    check_commands(args.root, load_commands(args.root))
    rkeys = restart_keys(args.root)
    check_restart_table(args.root, rkeys)
    check_restart_prose(args.root, rkeys)
    check_internal(args.root)
    check_presets(args.root)
    check_versions(args.root)
    for e in errors:
        print(e)
    print("%d difference(s)" % len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
