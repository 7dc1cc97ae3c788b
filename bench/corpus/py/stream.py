#!/usr/bin/env python3
"""Writes a git fast-import stream for a synthetic forge repository (used by ../gen-repo.sh).

    stream.py --commits N --tags T --branches B --seed S > stream

Everything comes from one seeded PRNG (prng.Rng) and fixed word lists: the same arguments give the
same stream byte for byte, hence the same objects and SHAs. Dates are explicit (raw format), so
nothing depends on the clock, the locale or the environment.

History model:
  * main: the initial import (a tree of ~430 files), then commits touching 1-10 files with
    line-level edits (inserted blocks, modified lines, deleted ranges: diffs with context), new files,
    deleted files, renames with small edits (detected by git's rename detection), a few directory
    moves, binary updates, and >= 5 "big" commits that add or regenerate a >10k-line generated file.
  * topic branches: fork from main, reserve one directory (main leaves its files alone meanwhile),
    get 1-9 commits, then merge back with a real merge commit (no conflicts by construction).
    Merged topic refs are deleted except a few kept as stale branches; topics still open at the end
    stay as branches.
  * stable branches: fork at a release tag, get backport commits and vX.Y.Z tags, never merged.
  * tags: T annotated tags (vMAJOR.MINOR on main, vX.Y.Z on stable branches), some with a fake PGP
    signature block, two tags on tags, a few lightweight tags.
Stats go to stderr as "key=value" lines.
"""
import argparse
import base64
import re
import sys
import time
import zlib

from prng import Rng

# --------------------------------------------------------------------------------------------
# people

# (name, email, tz, weight). Index 0 is the top-level maintainer (merges, releases).
AUTHORS = [
    ("Ada Maintainer", "ada@shellac.example", "+0000", 10),
    ("Brian Kowalski", "brian.kowalski@example.com", "-0500", 9),
    ("Chen Wei", "chenwei@example.cn", "+0800", 8),
    ("Dana Okafor", "dana@okafor.example.org", "+0100", 8),
    ("José Muñoz-Ñúñez", "jose.munoz@example.es", "+0200", 6),
    ("Zoë Åström", "zoe.astrom@example.se", "+0100", 5),
    ("山田 太郎", "taro.yamada@example.jp", "+0900", 4),
    ("Mallory \"&lt;script&gt;\" O'Brien & Co", "mallory&co@example.org", "-0800", 3),
    ("Erik Lindqvist", "erik@lindqvist.example", "+0200", 6),
    ("Fatima Al-Sayed", "fatima.alsayed@example.net", "+0300", 6),
    ("Gregor Novak", "gnovak@example.si", "+0100", 5),
    ("Hannah Schmidt", "hannah.schmidt@example.de", "+0200", 7),
    ("Ivan Petrov", "ivan.petrov@example.ru", "+0300", 5),
    ("Jun Park", "jun.park@example.kr", "+0900", 4),
    ("Kavya Reddy", "kavya@example.in", "+0530", 6),
    ("Liam O'Connor", "liam.oconnor@example.ie", "+0000", 4),
    ("Maria Rossi", "maria.rossi@example.it", "+0100", 5),
    ("Nils Berg", "nils@berg.example.no", "+0100", 3),
    ("Olga Ivanova", "olga@example.ua", "+0200", 3),
    ("Pedro Alves", "pedro.alves@example.br", "-0300", 4),
    ("Quentin Dubois", "quentin.dubois@example.fr", "+0100", 3),
    ("Rachel Green", "rgreen@example.com", "-0700", 4),
    ("build bot", "ci-bot@shellac.example", "+0000", 2),
    ("Tomasz Wiśniewski", "tomasz.w@example.pl", "+0100", 3),
]
AUTHOR_TABLE = [(a[3], i) for i, a in enumerate(AUTHORS)]
MAINTAINERS = [0, 1, 2, 3, 11]          # commit other people's patches
MALLORY = 7
# authors of the commits whose message (and ident) is latin-1
LATIN1_AUTHORS = [
    ("François Pérez", "francois.perez@example.fr", "+0100"),
    ("Jürgen Groß", "juergen.gross@example.de", "+0100"),
]

# --------------------------------------------------------------------------------------------
# words

NOUNS = ("buffer queue socket page inode device request packet entry table cache node list lock "
         "timer event channel frame block segment region context session handle stream record "
         "index map ring slot port pipe zone cluster tree chunk header payload token cursor vector "
         "range key value state config policy route filter hook worker thread task group quota "
         "mount file dentry irq dma bus clock link peer target").split()
VERBS = ("init alloc free get put lookup insert remove flush sync update reset start stop open close "
         "read write map unmap attach detach register unregister validate parse encode decode submit "
         "complete release acquire prepare commit abort resize scan walk merge split clear mark dump "
         "probe suspend resume enable disable").split()
ADJS = ("dirty stale pending active idle valid shared private cached pinned frozen locked dead live "
        "empty full first last next prev old new max min raw").split()
FIELDS = ("count len size flags state refcnt lock list next prev owner priv ops id mask offset head "
          "tail nr_items timeout data index gen seq").split()
ERRNOS = "EINVAL ENOMEM EBUSY EAGAIN ENODEV EIO ENOENT EEXIST ENOSPC ETIMEDOUT EPERM EOPNOTSUPP".split()
CTYPES = ["int", "unsigned int", "long", "unsigned long", "u32", "u64", "size_t", "bool", "u8", "s64"]
PROSE_NOUNS = ("buffer queue lock driver request callback interface caller path error value field "
               "count function patch change code case user memory page device system timeout race "
               "leak reference pointer list table entry header descriptor handler thread worker "
               "limit size offset length flag state mode option default behaviour regression "
               "warning check test release cache allocator scheduler socket file directory "
               "transaction protocol parser decoder encoder backend frontend module tree map").split()
PROSE_VERBS3 = ("holds drops takes updates protects tracks owns returns allocates frees checks walks "
                "flushes replaces wraps exposes caches serialises reads writes validates skips "
                "reuses triggers hides breaks fixes").split()
PROSE_VERBS = ("fix avoid handle use move add remove drop make keep allow prevent ensure return take "
               "hold release call check update clean up convert rework split merge introduce "
               "document simplify replace rename").split()
PROSE_ADJS = ("stale missing wrong unused redundant possible new old generic explicit correct "
              "separate common global local internal current previous next invalid empty large "
              "small slow fast safe unsafe broken subtle").split()
DETS = ["the", "a", "this", "each", "every", "any", "our", "the new", "the old", "that"]
PREPS = ["in", "on", "for", "under", "after", "before", "with", "without", "from", "across", "inside"]
CONJS = ["and", "but", "so", "because", "while", "unless", "when", "until", "although"]
GERMAN = ("Größe Datei Verzeichnis Schlüssel Wert Fehler Speicher Gerät Übertragung Warteschlange "
          "Zeitüberschreitung Verbindung Benutzer Einstellung Prüfsumme ungültig gültig öffnen "
          "schließen lesen schreiben Zugriff verweigert Änderung Überprüfung Länge").split()
FRENCH = ("Corrigé le problème de mémoire dans la file d'attente ; la taille était mal "
          "calculée après la libération. Réécrit la vérification des entrées, déplacé "
          "l'allocation hors du verrou et ajouté un contrôle de sûreté. Merci à Jürgen Groß "
          "pour le rapport détaillé et à Zoë pour les tests.").split()

TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def sentence(r):
    w = [r.pick(DETS)]
    if r.chance(1, 2):
        w.append(r.pick(PROSE_ADJS))
    w += [r.pick(PROSE_NOUNS), r.pick(PROSE_VERBS3), r.pick(DETS)]
    if r.chance(1, 3):
        w.append(r.pick(PROSE_ADJS))
    w.append(r.pick(PROSE_NOUNS))
    if r.chance(1, 2):
        w += [r.pick(PREPS), r.pick(DETS), r.pick(PROSE_NOUNS)]
    if r.chance(1, 3):
        w += [r.pick(CONJS), "we", r.pick(PROSE_VERBS), r.pick(DETS), r.pick(PROSE_NOUNS)]
    if r.chance(1, 6):
        w.insert(r.between(1, len(w) - 1),
                 r.pick(["`%s_%s()`" % (r.pick(NOUNS), r.pick(VERBS)), "(see below)", "now",
                         "only", "no longer", "actually", "-- again --", "e.g. on 32-bit"]))
    s = " ".join(w)
    return s[0].upper() + s[1:] + r.pick([".", ".", ".", ".", "!", "?", ":"])


def wrap(words_text, width, indent=""):
    out, cur = [], indent
    for w in words_text.split(" "):
        if len(cur) + len(w) + 1 > width and cur.strip():
            out.append(cur.rstrip())
            cur = indent
        cur += w + " "
    if cur.strip():
        out.append(cur.rstrip())
    return out


def paragraph(r, width=72, indent="", n=None):
    n = n or r.between(2, 5)
    return wrap(" ".join(sentence(r) for _ in range(n)), width, indent)


# --------------------------------------------------------------------------------------------
# file contents

class F:
    """One file version. Immutable: edits make a new F."""
    __slots__ = ("kind", "lines", "mode", "eol", "fnl", "enc", "gen", "raw", "pfx", "_data")

    def __init__(self, kind, lines=None, mode="100644", eol="\n", fnl=True, enc="utf-8",
                 gen=False, raw=None, pfx="x"):
        self.kind, self.lines, self.mode, self.eol, self.fnl = kind, lines, mode, eol, fnl
        self.enc, self.gen, self.raw, self.pfx, self._data = enc, gen, raw, pfx, None

    def data(self):
        if self._data is None:
            if self.raw is not None:
                self._data = self.raw
            else:
                s = self.eol.join(self.lines)
                if self.fnl and self.lines:
                    s += self.eol
                self._data = s.encode(self.enc)
        return self._data

    def editable(self):
        return self.raw is None and not self.gen and self.mode != "120000"

    def with_lines(self, lines):
        return F(self.kind, lines, self.mode, self.eol, self.fnl, self.enc, self.gen, None, self.pfx)


def c_expr(r, p):
    k = r.below(9)
    if k == 0:
        return str(r.between(0, 64))
    if k == 1:
        return "0x%x" % (1 << r.below(16))
    if k == 2:
        return "%s->%s + 1" % (r.pick(NOUNS), r.pick(FIELDS))
    if k == 3:
        return "sizeof(*%s)" % r.pick(NOUNS)
    if k == 4:
        return "%s_%s_%s" % (p.upper(), r.pick(ADJS).upper(), r.pick(NOUNS).upper())
    if k == 5:
        return "min(%s, %s->%s)" % (r.pick(FIELDS), r.pick(NOUNS), r.pick(FIELDS))
    if k == 6:
        return "NULL"
    if k == 7:
        return r.pick(["true", "false"])
    return "%s_%s_%s(%s)" % (p, r.pick(VERBS), r.pick(NOUNS), r.pick(NOUNS))


def c_stmt(r, p, ind):
    t = "\t" * ind
    v, f = r.pick(NOUNS), r.pick(FIELDS)
    k = r.below(13)
    if k == 0:
        return [t + "if (!%s)" % v, t + "\treturn -%s;" % r.pick(ERRNOS)]
    if k == 1:
        return [t + "ret = %s_%s_%s(%s, %s);" % (p, r.pick(VERBS), r.pick(NOUNS), v, f),
                t + "if (ret)", t + "\tgoto out;"]
    if k == 2:
        return [t + "%s->%s = %s;" % (v, f, c_expr(r, p))]
    if k == 3:
        return [t + "spin_lock(&%s->lock);" % v, t + "%s->%s = %s;" % (v, f, c_expr(r, p)),
                t + "spin_unlock(&%s->lock);" % v]
    if k == 4:
        return [t + "for (i = 0; i < %s->%s; i++) {" % (v, f),
                t + "\tif (%s->%s[i] == %s)" % (v, r.pick(FIELDS), c_expr(r, p)),
                t + "\t\tcontinue;",
                t + "\t%s_%s(%s, i);" % (p, r.pick(VERBS), v), t + "}"]
    if k == 5:
        lines = wrap(sentence(r) + " " + sentence(r), 72, t + " * ")
        return [t + "/*"] + lines + [t + " */"]
    if k == 6:
        return [t + 'pr_%s("%s: %s %s failed: %%d\\n", __func__, ret);'
                % (r.pick(["err", "warn", "debug", "info"]), p, r.pick(VERBS), r.pick(NOUNS))]
    if k == 7:
        return [t + "if (%s->%s & %s_%s_%s) {" % (v, f, p.upper(), r.pick(ADJS).upper(), r.pick(FIELDS).upper()),
                t + "\t%s->%s = %s;" % (v, r.pick(FIELDS), c_expr(r, p)),
                t + "\t%s_%s_%s(%s);" % (p, r.pick(VERBS), r.pick(NOUNS), v), t + "}"]
    if k == 8:
        return [t + "list_for_each_entry(%s, &%s->%s, list)" % (r.pick(NOUNS), v, r.pick(FIELDS)),
                t + "\t%s_%s(%s);" % (p, r.pick(VERBS), v)]
    if k == 9:
        return [t + "%s %s = %s;" % (r.pick(CTYPES), r.pick(FIELDS), c_expr(r, p))]
    if k == 10:
        return [t + "switch (%s->%s) {" % (v, f),
                t + "case %s_%s:" % (p.upper(), r.pick(ADJS).upper()),
                t + "\tret = %s;" % c_expr(r, p), t + "\tbreak;",
                t + "default:", t + "\tret = -%s;" % r.pick(ERRNOS), t + "}"]
    if k == 11:
        return [t + "WARN_ON_ONCE(%s->%s > %s);" % (v, f, c_expr(r, p))]
    return [t + "%s_%s_%s(%s, %s);" % (p, r.pick(VERBS), r.pick(NOUNS), v, c_expr(r, p))]


def c_func(r, p):
    n, vb = r.pick(NOUNS), r.pick(VERBS)
    name = "%s_%s_%s" % (p, n, vb)
    out = []
    if r.chance(3, 5):
        out += ["/**", " * %s - %s the %s %s" % (name, vb, r.pick(ADJS), n),
                " * @%s: the %s to %s" % (n, n, vb), " *"]
        out += wrap(" ".join(sentence(r) for _ in range(r.between(1, 3))), 76, " * ")
        out.append(" */")
    static = r.chance(2, 3)
    ret = r.pick(["int", "int", "int", "void", "bool", "struct %s_%s *" % (p, n), "unsigned long", "ssize_t"])
    args = ["struct %s_%s *%s" % (p, n, n)]
    for _ in range(r.below(3)):
        args.append("%s %s" % (r.pick(CTYPES), r.pick(FIELDS)))
    out.append("%s%s%s%s(%s)" % ("static " if static else "", ret, "" if ret.endswith("*") else " ",
                                 name, ", ".join(args)))
    out.append("{")
    if ret == "int":
        out.append("\tint ret = 0;")
    out.append("\tunsigned int i;")
    if r.chance(1, 2):
        out.append("\tunsigned long flags;")
    out.append("")
    for _ in range(r.between(2, 6)):
        out += c_stmt(r, p, 1)
    if ret == "int":
        out += ["out:", "\treturn ret;"]
    elif ret == "bool":
        out.append("\treturn %s->%s != 0;" % (n, r.pick(FIELDS)))
    elif ret != "void":
        out.append("\treturn %s;" % ("NULL" if ret.endswith("*") else "0"))
    out.append("}")
    if not static:
        out.append("EXPORT_SYMBOL_GPL(%s);" % name)
    out.append("")
    return out


def c_file(r, p, path, target):
    out = ["// SPDX-License-Identifier: GPL-2.0-only", "/*",
           " * %s - %s" % (path.rsplit("/", 1)[-1], sentence(r).rstrip(".!?:").lower()), " *",
           " * Copyright (C) %d %s" % (r.between(2005, 2012), r.pick(AUTHORS)[0]), " */", ""]
    for _ in range(r.between(2, 7)):
        out.append("#include <%s/%s.h>" % (r.pick(["linux", "shellac", "asm", p]), r.pick(NOUNS)))
    out.append("")
    if r.chance(1, 2):
        out += ["#define %s_%s_%s\t%s" % (p.upper(), r.pick(ADJS).upper(), r.pick(FIELDS).upper(), c_expr(r, p))
                for _ in range(r.between(1, 5))] + [""]
    while len(out) < target:
        out += c_func(r, p)
    return out


def h_block(r, p):
    k = r.below(3)
    if k == 0:
        n = r.pick(NOUNS)
        out = ["struct %s_%s {" % (p, n)]
        for _ in range(r.between(2, 9)):
            out.append("\t%s\t%s;%s" % (r.pick(CTYPES + ["struct list_head", "spinlock_t"]), r.pick(FIELDS),
                                        ("\t/* %s */" % r.pick(PROSE_NOUNS)) if r.chance(1, 3) else ""))
        return out + ["};", ""]
    if k == 1:
        return ["#define %s_%s_%s\t%s" % (p.upper(), r.pick(ADJS).upper(), r.pick(NOUNS).upper(),
                                         "0x%08x" % (r.u64() & 0xFFFFFFFF)) for _ in range(r.between(2, 8))] + [""]
    return ["%s %s_%s_%s(struct %s_%s *%s);" % (r.pick(["int", "void", "bool", "long"]), p, r.pick(NOUNS),
                                                r.pick(VERBS), p, r.pick(NOUNS), r.pick(NOUNS))
            for _ in range(r.between(1, 6))] + [""]


def h_file(r, p, path, target):
    guard = "_" + re.sub(r"[^A-Z0-9]", "_", path.upper()) + "_"
    out = ["/* SPDX-License-Identifier: GPL-2.0 */", "#ifndef " + guard, "#define " + guard, "",
           "#include <linux/types.h>", ""]
    while len(out) < target:
        out += h_block(r, p)
    return out + ["#endif /* %s */" % guard]


def doc_block(r, kind):
    k = r.below(6)
    if k == 0 and kind == "rst":
        t = sentence(r).rstrip(".!?:")
        return [t, "-" * len(t), ""]
    if k == 0 and kind == "md":
        return ["## " + sentence(r).rstrip(".!?:"), ""]
    if k == 1:
        pre = {"rst": ["::", ""], "md": ["```c"]}.get(kind, [""])
        post = {"md": ["```", ""]}.get(kind, [""])
        ind = "    " if kind != "md" else ""
        return pre + [ind + l.replace("\t", "    ") for l in c_stmt(r, r.pick(NOUNS), 0)] + post
    if k == 2:
        bullet = "- " if kind != "txt" else "  * "
        return [bullet + sentence(r) for _ in range(r.between(2, 5))] + [""]
    if k == 3 and kind == "md":
        rows = ["| %s | %s | %s |" % (r.pick(FIELDS), r.pick(CTYPES), sentence(r)) for _ in range(r.between(2, 6))]
        return ["| field | type | meaning |", "|---|---|---|"] + rows + [""]
    return paragraph(r, r.pick([72, 72, 76, 80])) + [""]


def doc_file(r, kind, path, target):
    title = "%s %s" % (r.pick(PROSE_ADJS).capitalize(), " ".join(r.pick(PROSE_NOUNS) for _ in range(2)))
    if kind == "rst":
        out = ["=" * len(title), title, "=" * len(title), ""]
    elif kind == "md":
        out = ["# " + title, ""]
    else:
        out = [title, "~" * len(title), ""]
    while len(out) < target:
        out += doc_block(r, kind)
    if r.chance(1, 20):    # a very long line, as real docs have
        out.insert(len(out) // 2, " ".join(sentence(r) for _ in range(12)))
    return out


def py_block(r):
    n, v = r.pick(NOUNS), r.pick(VERBS)
    out = ["", "", "def %s_%s(%s, %s=None):" % (v, n, n, r.pick(FIELDS)),
           '    """%s"""' % sentence(r)]
    for _ in range(r.between(2, 7)):
        k = r.below(5)
        if k == 0:
            out += ["    if %s is None:" % n, "        return %s" % r.pick(["None", "0", "[]", "False"])]
        elif k == 1:
            out += ["    for %s in %s.%s:" % (r.pick(FIELDS), n, r.pick(FIELDS) + "s"),
                    "        %s.%s()" % (r.pick(FIELDS), r.pick(VERBS))]
        elif k == 2:
            out.append("    # " + sentence(r))
        elif k == 3:
            out.append('    print("%s: %%s" %% %s, file=sys.stderr)' % (v, n))
        else:
            out.append("    %s = %s.get(%r, %d)" % (r.pick(FIELDS), n, r.pick(FIELDS), r.below(100)))
    out.append("    return %s" % n)
    return out


def py_file(r, path, target):
    out = ["#!/usr/bin/env python3", '"""%s"""' % sentence(r), "", "import os", "import sys"]
    while len(out) < target:
        out += py_block(r)
    return out + ["", "", 'if __name__ == "__main__":', "    sys.exit(main())"]


def sh_block(r):
    n, v = r.pick(NOUNS), r.pick(VERBS)
    k = r.below(3)
    if k == 0:
        return ["", "test_expect_success '%s %s %s' '" % (v, r.pick(ADJS), n),
                "\tgit %s %s >actual &&" % (r.pick(["log", "show", "diff", "rev-parse", "ls-tree"]), n),
                "\ttest_cmp expect actual", "'"]
    if k == 1:
        return ["", "%s_%s () {" % (v, n), '\tlocal %s="$1"' % n,
                '\tif [ -z "$%s" ]; then' % n, '\t\techo "%s: missing %s" >&2' % (v, n), "\t\treturn 1",
                "\tfi", '\t%s "$%s" || return $?' % (r.pick(VERBS), n), "}"]
    return ["# " + sentence(r)]


def sh_file(r, path, target):
    out = ["#!/bin/sh", "# " + sentence(r), "", "set -e", ". ./test-lib.sh"]
    while len(out) < target:
        out += sh_block(r)
    return out + ["", "test_done"]


def pl_block(r):
    n = r.pick(NOUNS)
    return ["", "# " + sentence(r), "if ($line =~ /^\\+.*\\b%s_%s\\s*\\(/) {" % (n, r.pick(VERBS)),
            '\tWARN("%s", "%s\\n" . $herecurr);' % (n.upper(), sentence(r)), "}"]


def pl_file(r, path, target):
    out = ["#!/usr/bin/env perl", "# SPDX-License-Identifier: GPL-2.0", "use strict;", "use warnings;", ""]
    while len(out) < target:
        out += pl_block(r)
    return out + ["", "exit($clean == 0);"]


def mk_file(r, p, names, target):
    out = ["# SPDX-License-Identifier: GPL-2.0", "#", "# Makefile for the %s subsystem" % p, "#", ""]
    for nm in names:
        out.append("obj-$(CONFIG_%s_%s)\t+= %s.o" % (p.upper(), r.pick(NOUNS).upper(), nm))
    out += ["", "ccflags-$(CONFIG_%s_DEBUG) += -DDEBUG" % p.upper()]
    return out


def kconfig_block(r, p):
    out = ["", "config %s_%s" % (p.upper(), r.pick(NOUNS).upper()),
           '\ttristate "%s %s support"' % (p, r.pick(NOUNS)),
           "\tdepends on %s" % r.pick([p.upper(), "NET", "PCI", "USB", "MMU", "64BIT"]),
           "\thelp"]
    return out + wrap(" ".join(sentence(r) for _ in range(r.between(1, 3))), 70, "\t  ")


def kconfig_file(r, p, target):
    out = ["# SPDX-License-Identifier: GPL-2.0-only", 'menu "%s"' % p]
    while len(out) < target:
        out += kconfig_block(r, p)
    return out + ["", "endmenu"]


def bat_file(r, target):
    out = ["@echo off", "rem " + sentence(r), "setlocal"]
    while len(out) < target:
        k = r.below(3)
        if k == 0:
            out.append("set %s=%s" % (r.pick(FIELDS).upper(), r.pick(NOUNS)))
        elif k == 1:
            out += ["if not exist %s\\%s.obj (" % (r.pick(NOUNS), r.pick(NOUNS)),
                    "    call :%s %%%s%%" % (r.pick(VERBS), r.pick(FIELDS).upper()), ")"]
        else:
            out.append("rem " + sentence(r))
    return out + ["endlocal"]


def generic_block(r, kind, p):
    """A block of new lines for an insertion edit."""
    if kind == "c":
        return c_stmt(r, p, r.pick([1, 1, 1, 2]))
    if kind == "h":
        return h_block(r, p)
    if kind in ("rst", "md", "txt"):
        return doc_block(r, kind)
    if kind == "py":
        return py_block(r)[r.below(3):]
    if kind == "sh":
        return sh_block(r)
    if kind == "pl":
        return pl_block(r)
    if kind == "mk":
        return ["obj-$(CONFIG_%s_%s)\t+= %s_%s.o" % (p.upper(), r.pick(NOUNS).upper(), r.pick(NOUNS), r.pick(VERBS))]
    if kind == "kconfig":
        return kconfig_block(r, p)
    if kind == "bat":
        return ["set %s=%s" % (r.pick(FIELDS).upper(), r.pick(NOUNS)), "rem " + sentence(r)]
    return paragraph(r)


WORD_CLASS = {}
for _cls in (PROSE_ADJS, PROSE_NOUNS, PROSE_VERBS3, ADJS, FIELDS, VERBS, NOUNS):
    for _w in _cls:
        WORD_CLASS[_w] = _cls


def tweak_word(r, w):
    cls = WORD_CLASS.get(w.lower())
    if cls is None:
        return None
    new = r.pick(cls)
    if w.isupper():
        return new.upper()
    return new.capitalize() if w[:1].isupper() else new


def tweak_token(r, t):
    if t.isdigit():
        return str(int(t) + r.between(1, 9))
    if "_" in t:
        parts = t.split("_")
        idx = [i for i, x in enumerate(parts) if x.lower() in WORD_CLASS and x != "CONFIG"]
        if not idx:
            return None
        i = r.pick(idx)
        parts[i] = tweak_word(r, parts[i])
        return "_".join(parts)
    return tweak_word(r, t)


def tweak_line(r, line):
    """The line with one word of our vocabulary (or a number) replaced, as a real edit would
    rename a variable or change a constant; None when the line has nothing to tweak."""
    if "SPDX" in line or line.startswith("#!") or line.startswith("#include"):
        return None
    toks = list(TOKEN_RE.finditer(line))
    for _ in range(min(4, len(toks))):
        m = r.pick(toks)
        new = tweak_token(r, m.group())
        if new is not None and new != m.group():
            return line[:m.start()] + new + line[m.end():]
    return None


CODE_KINDS = ("c", "h", "py", "sh", "pl", "kconfig")


def boundary(lines, at, kind):
    """Move `at` forward (at most 15 lines) to a place where a statement or paragraph ends, so an
    inserted or deleted block sits between statements instead of in the middle of one."""
    n = len(lines)
    for i in range(at, min(n, at + 15) + 1):
        if i == 0 or i == n:
            return i
        prev = lines[i - 1].rstrip()
        if prev == "":
            return i
        if kind in CODE_KINDS and (prev.endswith(";") or prev.endswith("{") or prev.endswith("}")):
            return i
    return at


def edit_lines(r, f, hunks):
    """Line-level edits in `hunks` places, bottom up, so each hunk keeps its context."""
    lines = list(f.lines)
    n = len(lines)
    if n == 0:
        return generic_block(r, f.kind, f.pfx)
    kind = f.kind
    pos = sorted((r.below(n + 1) for _ in range(hunks)), reverse=True)
    for at in pos:
        n = len(lines)
        at = min(at, n)
        op = r.below(100)
        if n > 2500:
            op = 80 if op < 50 else op       # shrink huge files
        if n < 25 and op >= 70:
            op = 0
        if op < 35 and kind == "c" and r.chance(1, 6):     # a new function, between functions
            i = at
            while i < n and not (lines[i - 1] == "" and i >= 2 and lines[i - 2][:1] in ("}", "E")):
                i += 1
            lines[i:i] = c_func(r, f.pfx)
        elif op < 35:      # insert a block
            at = boundary(lines, at, kind)
            lines[at:at] = generic_block(r, kind, f.pfx)
        elif op < 70:      # modify 1-3 neighbouring lines
            i, done, want = min(at, n - 1), 0, r.between(1, 3)
            while i < n and i < at + 12 and done < want:
                t = tweak_line(r, lines[i])
                if t is not None:
                    lines[i] = t
                    done += 1
                    i += r.between(1, 2)
                else:
                    i += 1
        else:              # delete (or replace) a run of statements / a paragraph
            a = boundary(lines, min(at, n - 1), kind)
            b = boundary(lines, min(n, a + r.between(1, 10)), kind)
            if b <= a:
                b = min(n, a + 1)
            lines[a:b] = generic_block(r, kind, f.pfx) if op >= 90 else []
    if lines == list(f.lines):
        at = boundary(lines, r.below(len(lines) + 1), kind)
        lines[at:at] = generic_block(r, kind, f.pfx)
    return lines


# --------------------------------------------------------------------------------------------
# binary files (valid PNG / gzip built without a compressor, so no zlib-version dependence)

def deflate_stored(data):
    out = bytearray()
    i, n = 0, len(data)
    while True:
        chunk = data[i:i + 65535]
        i += len(chunk)
        final = 1 if i >= n else 0
        out.append(final)
        out += len(chunk).to_bytes(2, "little") + (len(chunk) ^ 0xFFFF).to_bytes(2, "little") + chunk
        if final:
            return bytes(out)


def png_bytes(r, w, h):
    def chunk(t, d):
        return len(d).to_bytes(4, "big") + t + d + (zlib.crc32(t + d) & 0xFFFFFFFF).to_bytes(4, "big")
    base = r.between(0, 255)
    noise = r.randbytes(w * h)
    raw = bytearray()
    for y in range(h):
        raw.append(0)
        for x in range(w):
            nz = noise[y * w + x] & 15
            raw += bytes(((base + x * 4 + nz) & 255, (y * 4) & 255, 0 if (x ^ y) & 8 else 255))
    data = bytes(raw)
    z = b"\x78\x01" + deflate_stored(data) + (zlib.adler32(data) & 0xFFFFFFFF).to_bytes(4, "big")
    ihdr = w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes((8, 2, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", z) + chunk(b"IEND", b"")


def gz_bytes(r, text):
    data = text.encode()
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflate_stored(data)
            + (zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "little") + (len(data) & 0xFFFFFFFF).to_bytes(4, "little"))


def fw_bytes(r, size):
    out = bytearray(b"SHFW\x00\x01\x00\x00")
    out += r.randbytes(24)
    while len(out) < size:
        if r.chance(1, 3):
            out += b"\x00" * r.between(16, 512)
        else:
            out += r.randbytes(r.between(64, 1024))
    return bytes(out[:size])


def binary_file(r, path):
    if path.endswith(".png"):
        return F("bin", raw=png_bytes(r, r.pick([48, 64, 96]), r.pick([32, 48, 64])))
    if path.endswith(".gz"):
        return F("bin", raw=gz_bytes(r, "\n".join(paragraph(r, n=8) * 3)))
    return F("bin", raw=fw_bytes(r, r.between(12, 40) * 1024))


# --------------------------------------------------------------------------------------------
# big generated files (> 10,000 lines each)

BIG_FILES = [
    ("src/lib/unicode_tables.c", "lib: regenerate Unicode case tables", "lib: add generated Unicode case tables"),
    ("po/de.po", "po: update German translation", "po: add German translation"),
    ("include/shellac/hw_regs_gen.h", "include: regenerate hardware register map", "include: add generated hardware register map"),
    ("docs/api/reference.txt", "docs: regenerate the API reference", "docs: add the generated API reference"),
    ("tests/data/golden-output.txt", "tests: refresh golden output", "tests: add golden output for the render tests"),
]


def big_content(r, path, variant):
    lines = []
    if path.endswith(".c"):
        lines += ["// SPDX-License-Identifier: GPL-2.0", "/* Generated by tools/gen_unicode.py -- DO NOT EDIT. */",
                  "/* Unicode data version %d.%d */" % (6 + variant, variant % 3), "",
                  "static const struct uc_map uc_table[] = {"]
        for i in range(r.between(10500, 14000)):
            cp = 0x41 + i * (3 + variant % 2)
            lines.append("\t{ 0x%05X, 0x%05X, 0x%02X },\t/* %s %s */"
                         % (cp, cp ^ (0x20 + variant), (i * 7 + variant) & 0xFF, r.pick(ADJS), r.pick(NOUNS)))
        return lines + ["};"]
    if path.endswith(".po"):
        lines += ['# German translation for shellac.', 'msgid ""', 'msgstr ""',
                  '"Content-Type: text/plain; charset=UTF-8\\n"', '"X-Revision: %d\\n"' % variant, ""]
        while len(lines) < 10500 + variant * 300:
            n, v = r.pick(NOUNS), r.pick(VERBS)
            lines += ["#: src/%s/%s.c:%d" % (r.pick(NOUNS), n, r.between(10, 3000)),
                      'msgid "failed to %s %s"' % (v, n),
                      'msgstr "%s %s %s"' % (r.pick(GERMAN), r.pick(GERMAN), r.pick(GERMAN)), ""]
        return lines
    if path.endswith(".h"):
        lines += ["/* SPDX-License-Identifier: GPL-2.0 */", "/* Generated register map, revision %d. */" % variant,
                  "#ifndef _SHELLAC_HW_REGS_GEN_H_", "#define _SHELLAC_HW_REGS_GEN_H_", ""]
        base = 0x40000000 + variant * 0x1000
        for i in range(r.between(10500, 12500)):
            lines.append("#define REG_%s_%s_%d\t0x%08x" % (r.pick(NOUNS).upper(), r.pick(FIELDS).upper(), i, base + i * 4))
        return lines + ["", "#endif"]
    lines += ["Generated file, revision %d. Do not edit by hand." % variant, ""]
    while len(lines) < 10500 + variant * 200:
        n, v = r.pick(NOUNS), r.pick(VERBS)
        lines += ["%s_%s_%s(%d)" % (r.pick(["core", "net", "fs", "mm"]), n, v, variant), "    " + sentence(r), ""]
    return lines


# --------------------------------------------------------------------------------------------
# initial tree

C_DIRS = [
    ("src/core", "core", 18), ("src/net", "net", 14), ("src/net/ipv4", "ipv4", 16),
    ("src/net/ipv6", "ipv6", 12), ("src/fs", "fs", 14), ("src/fs/ext", "ext", 12),
    ("src/mm", "mm", 15), ("src/crypto", "crypto", 14), ("src/drivers/usb/core", "usb", 12),
    ("src/drivers/usb/host", "hcd", 10), ("src/drivers/gpu/drm", "drm", 16),
    ("src/drivers/net/ethernet", "eth", 14), ("src/sound/core", "snd", 10), ("src/lib", "lib", 20),
    ("src/block", "blk", 12), ("src/ipc", "ipc", 8), ("src/security", "sec", 10),
    ("src/kernel/sched", "sched", 12), ("src/kernel/time", "tick", 9),
]
EXT_KIND = {".c": "c", ".h": "h", ".rst": "rst", ".md": "md", ".txt": "txt", ".py": "py", ".sh": "sh",
            ".pl": "pl", ".bat": "bat", ".po": "po"}


def kind_of(path):
    base = path.rsplit("/", 1)[-1]
    if base == "Makefile":
        return "mk"
    if base == "Kconfig":
        return "kconfig"
    dot = base.rfind(".")
    return EXT_KIND.get(base[dot:], "txt") if dot > 0 else "txt"


def size_for(r, kind):
    if kind == "c":
        band = r.weighted([(75, 0), (22, 1), (3, 2)])
        return [r.between(30, 250), r.between(250, 800), r.between(800, 3000)][band]
    if kind == "h":
        return r.between(30, 400)
    if kind in ("rst", "md", "txt"):
        return r.between(20, 300)
    return r.between(20, 200)


def make_text(r, path, pfx, target=None):
    kind = kind_of(path)
    target = target or size_for(r, kind)
    if kind == "c":
        lines = c_file(r, pfx, path, target)
    elif kind == "h":
        lines = h_file(r, pfx, path, target)
    elif kind in ("rst", "md", "txt"):
        lines = doc_file(r, kind, path, target)
    elif kind == "py":
        lines = py_file(r, path, target)
    elif kind == "sh":
        lines = sh_file(r, path, target)
    elif kind == "pl":
        lines = pl_file(r, path, target)
    elif kind == "kconfig":
        lines = kconfig_file(r, pfx, target)
    elif kind == "bat":
        return F(kind, bat_file(r, target), eol="\r\n", pfx=pfx)
    else:
        lines = doc_file(r, "txt", path, target)
    mode = "100755" if kind in ("sh", "pl") or (kind == "py" and path.startswith("tools/")) else "100644"
    return F(kind, lines, mode=mode, pfx=pfx)


def fresh_name(r, used, dirpath, ext, stem=None):
    for attempt in range(1000):
        s = stem if (stem and attempt == 0) else "%s_%s" % (r.pick(NOUNS), r.pick(VERBS + ADJS))
        if attempt > 50:
            s += "%d" % attempt
        p = "%s/%s%s" % (dirpath, s, ext) if dirpath else s + ext
        if p not in used:
            return p
    raise RuntimeError("no fresh name in " + dirpath)


def initial_tree(r, used):
    st = {}

    def put(path, f):
        st[path] = f
        used.add(path)

    for d, pfx, n in C_DIRS:
        names = []
        for _ in range(n):
            p = fresh_name(r, used, d, ".c")
            names.append(p.rsplit("/", 1)[-1][:-2])
            put(p, make_text(r, p, pfx))
        put(d + "/Makefile", F("mk", mk_file(r, pfx, names, 0), pfx=pfx))
        put(d + "/Kconfig", make_text(r, d + "/Kconfig", pfx, r.between(20, 120)))
    for i in range(40):
        d, pfx, _ = r.pick(C_DIRS)
        p = fresh_name(r, used, "include/shellac", ".h", pfx + "_" + r.pick(NOUNS))
        put(p, make_text(r, p, pfx))
    for i in range(10):
        p = fresh_name(r, used, "include/uapi/shellac", ".h")
        put(p, make_text(r, p, "uapi"))
    put("docs/index.rst", make_text(r, "docs/index.rst", "docs", 60))
    for d, ext, n in [("docs/design", ".rst", 10), ("docs/howto", ".md", 10), ("docs/api", ".txt", 8),
                      ("docs/process", ".rst", 6), ("tools", ".py", 8), ("scripts", ".sh", 5),
                      ("tests/unit", ".c", 10), ("tests/integration", ".sh", 10)]:
        for _ in range(n):
            p = fresh_name(r, used, d, ext)
            put(p, make_text(r, p, d.rsplit("/", 1)[-1]))
    put("scripts/checkpatch.pl", make_text(r, "scripts/checkpatch.pl", "scripts", 400))
    put("scripts/build.bat", make_text(r, "scripts/build.bat", "scripts", 40))
    # a text file in latin-1 (valid text, invalid UTF-8)
    credits = ["Contributors (this file is ISO-8859-1 encoded)", ""] + [
        "N: %s" % n for n in ("François Pérez", "Jürgen Groß", "Søren Kierkegård", "Ana María Núñez",
                              "Björn Ångström")] + [""] + paragraph(r, n=6)
    put("docs/legacy/CREDITS.latin1", F("txt", credits, enc="latin-1", pfx="docs"))
    put("docs/README", F("link", raw=b"../README.md", mode="120000"))
    for p in ("assets/logo.png", "docs/images/arch.png", "tests/data/sample-1.gz", "tests/data/sample-2.gz",
              "firmware/wifi-fw-01.bin", "firmware/dsp.bin"):
        put(p, binary_file(r, p))
    put("README.md", make_text(r, "README.md", "top", 120))
    put("CONTRIBUTING.md", make_text(r, "CONTRIBUTING.md", "top", 80))
    put("COPYING", F("txt", ["Synthetic license text for the shellac benchmark corpus.", ""] + paragraph(r, n=30), pfx="top"))
    news = make_text(r, "NEWS", "top", 150)
    put("NEWS", F("txt", news.lines, fnl=False, pfx="top"))    # no newline at end of file
    mnt = ["List of maintainers", "", ]
    for d, pfx, _ in C_DIRS:
        a = AUTHORS[r.pick(MAINTAINERS)]
        mnt += ["%s SUBSYSTEM" % pfx.upper(), "M:\t%s <%s>" % (a[0], a[1]), "S:\tMaintained", "F:\t%s/" % d, ""]
    put("MAINTAINERS", F("txt", mnt, pfx="top"))
    put("Makefile", F("mk", ["# SPDX-License-Identifier: GPL-2.0", "VERSION = 0", "PATCHLEVEL = 1", ""]
                      + ["obj-y += %s/" % d for d, _, _ in C_DIRS] + ["", "all: shellac", ""], pfx="top"))
    put(".gitignore", F("txt", ["*.o", "*.ko", "*.a", "/build/", "/shellac", ".*.cmd", "tags"], pfx="top"))
    return st


# --------------------------------------------------------------------------------------------
# the history

def area_of(path):
    parts = path.split("/")
    if parts[0] == "src":
        parts = parts[1:]
        if parts and parts[0] == "drivers":
            parts = parts[1:]
        d = parts[:-1]
        return ": ".join(d[:2]) if d else "core"
    if parts[0] == "include":
        base = parts[-1].rsplit(".", 1)[0]
        return "include: " + base.split("_")[0]
    if parts[0] in ("docs", "tools", "scripts", "tests", "firmware", "po", "assets"):
        return parts[0]
    return "build" if parts[0] in ("Makefile", ".gitignore") else "treewide"


SUBJECTS = [
    "fix {adj} {noun} in {fn}()",
    "add {noun} {verb} support",
    "remove unused {noun} {field}",
    "convert {noun} to {noun2}",
    "don't {verb} the {noun} twice",
    "use {fn}() instead of open-coding it",
    "document the {noun} locking rules",
    "avoid a {adj} {noun} after {verb}",
    "fix a < b comparison in {fn}() & friends",
    "simplify {fn}()",
    "make {fn}() return -{errno} on failure",
    "handle {adj} {noun} in the {verb} path",
    "check the {field} of the {noun} before {fn}()",
    "fix reference leak on the {noun} error path",
    "replace {noun}->{field} with {noun2}->{field}",
    "move {noun} {verb} out of the {noun2} lock",
    "quieten a {adj} warning in {fn}()",
]


class Gen:
    def __init__(self, args):
        self.r = Rng(args.seed)
        self.N, self.T, self.B = args.commits, args.tags, args.branches
        self.out = sys.stdout.buffer
        self.mark = 0
        self.count = 0
        self.now = 1262304000           # 2010-01-01T00:00:00Z
        self.used = set()
        self.stats = dict(merges=0, renames=0, dir_moves=0, big=0, latin1=0, new_files=0, deleted_files=0,
                          binary_changes=0, topic_commits=0, stable_commits=0, tags=0, light_tags=0, tag_on_tag=0)
        self.recent_subjects = []
        self.reserved = {}              # path -> topic, for paths a topic owns until it merges
        self.big_sizes = []             # (mark, lines changed) of big commits, for stats

    # ---- low-level stream writers
    def w(self, b):
        self.out.write(b)

    def data(self, b):
        self.w(b"data %d\n" % len(b))
        self.w(b)
        self.w(b"\n")

    def ident(self, who, when, tz):
        name, email = who[0], who[1]
        enc = who[3] if len(who) > 3 and isinstance(who[3], str) else "utf-8"
        return ("%s <%s> %d %s" % (name, email, when, tz)).encode(enc)

    def commit(self, ref, author, adate, committer, cdate, msg, changes, frm=None, merge=None, encoding=None):
        self.mark += 1
        self.count += 1
        w = self.w
        w(b"commit " + ref.encode() + b"\n")
        w(b"mark :%d\n" % self.mark)
        w(b"author " + self.ident(author, adate, author[2]) + b"\n")
        w(b"committer " + self.ident(committer, cdate, committer[2]) + b"\n")
        if encoding:
            w(b"encoding " + encoding.encode() + b"\n")
        self.data(msg if isinstance(msg, bytes) else msg.encode())
        if frm:
            w(b"from :%d\n" % frm)
        if merge:
            w(b"merge :%d\n" % merge)
        for path, f in changes:
            if f is None:
                w(b"D " + path.encode() + b"\n")
            else:
                w(b"M " + f.mode.encode() + b" inline " + path.encode() + b"\n")
                self.data(f.data())
        w(b"\n")
        return self.mark

    def annotated_tag(self, name, target, tagger, when, msg):
        self.mark += 1
        self.w(b"tag " + name.encode() + b"\n")
        self.w(b"mark :%d\nfrom :%d\n" % (self.mark, target))
        self.w(b"tagger " + self.ident(tagger, when, tagger[2]) + b"\n")
        self.data(msg.encode())
        return self.mark

    def reset(self, ref, target):
        self.w(b"reset " + ref.encode() + b"\n")
        if target is None:
            self.w(b"from " + b"0" * 40 + b"\n\n")
        else:
            self.w(b"from :%d\n\n" % target)

    # ---- time and people
    def tick(self):
        r = self.r
        gap = r.weighted([(70, 0), (20, 1), (10, 2)])
        self.now += [r.between(600, 14400), r.between(14400, 86400), r.between(30, 600)][gap]
        cdate = self.now
        adate = cdate if r.chance(1, 2) else cdate - r.between(60, 10 * 86400)
        return adate, cdate

    def author(self):
        return AUTHORS[self.r.weighted(AUTHOR_TABLE)]

    def committer_for(self, author):
        if self.r.chance(3, 10):
            return author
        return AUTHORS[self.r.pick(MAINTAINERS)]

    # ---- messages
    def subject(self, area, path=None, author=None):
        r = self.r
        n = r.pick(NOUNS)
        fn = "%s_%s" % (n, r.pick(VERBS))
        s = r.pick(SUBJECTS).format(adj=r.pick(PROSE_ADJS), noun=n, noun2=r.pick(NOUNS), verb=r.pick(VERBS),
                                    field=r.pick(FIELDS), fn=fn, errno=r.pick(ERRNOS))
        if author is AUTHORS[MALLORY] and r.chance(1, 2):
            s = "escape <script>alert(\"%s\")</script> & '%s' in %s()" % (n, r.pick(FIELDS), fn)
        if r.chance(1, 25):
            s += " " + r.pick(["(again)", "for real this time", "– take two", "“properly”",
                               "and clean up the surrounding code while at it, it was getting hard to follow"])
        return "%s: %s" % (area, s)

    def body(self, author, committer, extra=None):
        r = self.r
        parts = []
        for _ in range(r.weighted([(15, 0), (50, 1), (25, 2), (10, 3)])):
            parts.append("\n".join(paragraph(r)))
        if r.chance(1, 8):
            parts.append("\n".join("    " + l.replace("\t", "    ") for l in c_stmt(r, r.pick(NOUNS), 0)))
        if extra:
            parts.append(extra)
        tr = []
        for k in ("Reported-by", "Reviewed-by", "Tested-by", "Acked-by"):
            if r.chance(1, 6):
                a = self.author()
                tr.append("%s: %s <%s>" % (k, a[0], a[1]))
        if r.chance(1, 5):
            tr.append("Link: https://lists.shellac.example/r/%d.%s-1-%s" % (self.now, r.hexstr(8), author[1]))
        if r.chance(1, 20):
            tr.append("Cc: stable@shellac.example # v%d.%d+" % (r.below(10), r.below(40)))
        tr.append("Signed-off-by: %s <%s>" % (author[0], author[1]))
        if committer is not author:
            tr.append("Signed-off-by: %s <%s>" % (committer[0], committer[1]))
        parts.append("\n".join(tr))
        return "\n\n".join(parts)

    def message(self, subject, author, committer, extra=None):
        self.recent_subjects.append(subject)
        if len(self.recent_subjects) > 40:
            del self.recent_subjects[:20]
        return subject + "\n\n" + self.body(author, committer, extra) + "\n"

    # ---- choosing files
    def eligible(self, st, path, owner):
        f = st[path]
        return f.editable() and self.reserved.get(path) is owner

    def pick_files(self, st, owner, pool=None):
        """1-10 editable files `owner` may touch (None: main), most of them in one directory.
        Rejection sampling: filtering every path of the tree each commit would dominate the run."""
        r = self.r
        paths = pool if pool is not None else list(st)
        if not paths:
            return []
        first = None
        for _ in range(64):
            p = r.pick(paths)
            if p in st and self.eligible(st, p, owner):
                first = p
                break
        if first is None:
            cand = [p for p in paths if p in st and self.eligible(st, p, owner)]
            if not cand:
                return []
            first = r.pick(cand)
        n = r.weighted([(30, 1), (25, 2), (15, 3), (10, 4), (7, 5), (5, 6), (3, 7), (2, 8), (2, 9), (1, 10)])
        chosen = [first]
        if n == 1:
            return chosen
        d = first.rsplit("/", 1)[0] + "/" if "/" in first else ""
        same = [p for p in paths if p.startswith(d) and p in st and self.eligible(st, p, owner)] if d else []
        for _ in range(n - 1):
            if same and r.chance(7, 10):
                p = r.pick(same)
            else:
                p = r.pick(paths)
                if p not in st or not self.eligible(st, p, owner):
                    continue
            if p not in chosen:
                chosen.append(p)
        return chosen

    def edit_changes(self, st, paths):
        r = self.r
        ch = []
        for p in paths:
            f = st[p]
            nf = f.with_lines(edit_lines(r, f, r.weighted([(50, 1), (30, 2), (15, 3), (5, 4)])))
            st[p] = nf
            ch.append((p, nf))
        return ch

    def rename_change(self, st, owner, pool=None):
        """Rename one file, keeping most of its content. Returns (changes, subject-part) or None."""
        r = self.r
        cand = [p for p in (pool if pool is not None else list(st))
                if p in st and self.eligible(st, p, owner) and "/" in p and st[p].kind not in ("mk", "kconfig")
                and len(st[p].lines) >= 12]
        if not cand:
            return None
        old = r.pick(cand)
        d, base = old.rsplit("/", 1)
        ext = base[base.rfind("."):] if "." in base else ""
        if owner is None and r.chance(1, 3):     # move to a sibling directory
            sib = sorted({p.rsplit("/", 1)[0] for p in st if "/" in p and p.startswith(d.rsplit("/", 1)[0] + "/")
                          and p.count("/") == old.count("/")} - {d})
            if sib:
                nd = r.pick(sib)
                if not any(self.reserved.get(p) for p in st if p.startswith(nd + "/")):
                    d = nd
        new = fresh_name(r, self.used, d, ext, base[:len(base) - len(ext)] if d != old.rsplit("/", 1)[0] else None)
        self.used.add(new)
        f = st.pop(old)
        nf = f.with_lines(edit_lines(r, f, 1)) if r.chance(2, 3) else f
        st[new] = nf
        if owner is not None:
            self.reserved[new] = owner
            owner.changed.add(new)
            owner.changed.add(old)
        self.stats["renames"] += 1
        same_dir = new.rsplit("/", 1)[0] == old.rsplit("/", 1)[0]
        return [(old, None), (new, nf)], "%s %s to %s" % ("rename" if same_dir else "move", old.rsplit("/", 1)[-1],
                                                          new.rsplit("/", 1)[-1] if same_dir else new.rsplit("/", 1)[0] + "/")

    def new_file_change(self, st, owner, d=None):
        r = self.r
        if d is None:
            d = r.pick([c[0] for c in C_DIRS] + ["docs/howto", "docs/design", "tools", "tests/unit", "include/shellac"])
        sample = [p for p in st if p.startswith(d + "/") and "/" not in p[len(d) + 1:] and st[p].editable()
                  and st[p].kind not in ("mk", "kconfig")]
        if not sample:
            return None
        like = st[r.pick(sample)]
        ext = {"c": ".c", "h": ".h", "rst": ".rst", "md": ".md", "txt": ".txt", "py": ".py", "sh": ".sh",
               "pl": ".pl", "bat": ".bat"}.get(like.kind, ".txt")
        p = fresh_name(r, self.used, d, ext)
        self.used.add(p)
        f = make_text(r, p, like.pfx, r.between(20, 300))
        st[p] = f
        ch = [(p, f)]
        mk = d + "/Makefile"
        if ext == ".c" and mk in st and self.eligible(st, mk, owner):
            lines = list(st[mk].lines)
            lines.insert(r.between(5, max(5, len(lines) - 2)), "obj-$(CONFIG_%s_%s)\t+= %s.o"
                         % (like.pfx.upper(), r.pick(NOUNS).upper(), p.rsplit("/", 1)[-1][:-2]))
            st[mk] = st[mk].with_lines(lines)
            ch.append((mk, st[mk]))
        if owner is not None:
            self.reserved[p] = owner
            for c in ch:
                owner.changed.add(c[0])
        self.stats["new_files"] += 1
        return ch, "add %s" % p.rsplit("/", 1)[-1]

    # ---- commits on main
    def main_commit(self):
        r, st = self.r, self.main.state
        adate, cdate = self.tick()
        author = self.author()
        committer = self.committer_for(author)
        changes, subj = [], None
        x = r.below(1000)
        if self.stats["renames"] == 0 and self.count >= self.N // 3:
            x = 0                                   # at least one rename, whatever N is
        if x < 7:
            res = self.rename_change(st, None)
            if res:
                changes, what = res
                subj = "%s: %s" % (area_of(changes[1][0]), what)
        elif x < 20:
            res = self.new_file_change(st, None)
            if res:
                changes, what = res
                subj = "%s: %s" % (area_of(changes[0][0]), what)
        elif x < 23:
            cand = [p for p in st if self.eligible(st, p, None) and st[p].kind in ("c", "md", "rst", "txt", "py", "sh")
                    and p.count("/") >= 2]
            if cand:
                p = r.pick(cand)
                del st[p]
                changes = [(p, None)]
                subj = "%s: remove unused %s" % (area_of(p), p.rsplit("/", 1)[-1])
                self.stats["deleted_files"] += 1
        elif x < 26:
            bins = sorted(p for p in st if st[p].raw is not None and st[p].mode == "100644")
            if bins:
                p = r.pick(bins)
                st[p] = binary_file(r, p)
                changes = [(p, st[p])]
                subj = "%s: update %s" % (area_of(p), p.rsplit("/", 1)[-1])
                self.stats["binary_changes"] += 1
        elif x == 26 and r.chance(1, 4):
            res = self.dir_move(st)
            if res:
                changes, subj = res
        if not changes:
            paths = self.pick_files(st, None)
            changes = self.edit_changes(st, paths)
            subj = self.subject(area_of(paths[0]), paths[0], author)
        encoding = None
        if self.latin1_due():
            who = LATIN1_AUTHORS[self.stats["latin1"] % 2]
            author = (who[0], who[1], who[2], "latin-1")
            with_header = self.stats["latin1"] % 2 == 0
            self.stats["latin1"] += 1
            text = "%s: corrigé la gestion de la mémoire\n\n%s\n\nSigned-off-by: %s <%s>\n" % (
                area_of(changes[0][0]), "\n".join(wrap(" ".join(FRENCH), 72)), who[0], who[1])
            msg = text.encode("latin-1")
            encoding = "ISO-8859-1" if with_header else None
            if not with_header:
                author = (who[0], who[1], who[2])      # ident stays UTF-8, only the message is latin-1
            self.recent_subjects.append(text.split("\n", 1)[0])
        else:
            msg = self.message(subj, author, committer)
        m = self.commit("refs/heads/main", author, adate, committer, cdate, msg, changes, encoding=encoding)
        self.main.tip = m
        self.main_marks.append(m)
        self.after_main_commit(m, cdate)

    def latin1_due(self):
        k = self.stats["latin1"]
        return k < len(self.latin1_at) and self.count >= self.latin1_at[k]

    def dir_move(self, st):
        r = self.r
        dirs = {}
        for p in st:
            if "/" in p:
                dirs.setdefault(p.rsplit("/", 1)[0], []).append(p)
        leaves = sorted(d for d, ps in dirs.items() if 2 <= len(ps) <= 25 and d.count("/") >= 2
                        and not any(k.startswith(d + "/") for k in dirs if k != d)
                        and not any(self.reserved.get(p) for p in ps) and all(st[p].editable() or st[p].raw for p in ps))
        if not leaves:
            return None
        d = r.pick(leaves)
        parent = d.rsplit("/", 1)[0]
        for _ in range(100):
            nd = "%s/%s" % (parent, r.pick(NOUNS + ADJS))
            if nd not in dirs and not any(u.startswith(nd + "/") for u in self.used):
                break
        else:
            return None
        ch = []
        for p in sorted(dirs[d]):
            np_ = nd + p[len(d):]
            self.used.add(np_)
            f = st.pop(p)
            st[np_] = f
            ch += [(p, None), (np_, f)]
        self.stats["dir_moves"] += 1
        self.stats["renames"] += len(dirs[d])
        return ch, "%s: move %s/ to %s/" % (area_of(dirs[d][0]), d, nd)

    def big_commit(self):
        r, st = self.r, self.main.state
        k = self.stats["big"]
        path, regen_subj, add_subj = BIG_FILES[k % len(BIG_FILES)]
        variant = k + 1
        f = F(kind_of(path), big_content(r, path, variant), gen=True, pfx="gen")
        existed = path in st
        st[path] = f
        self.used.add(path)
        adate, cdate = self.tick()
        author = AUTHORS[r.pick([0, 22, 2, 11])]
        msg = self.message(regen_subj if existed else add_subj, author, author,
                           "Generated with tools/gen_%s.py, revision %d. No functional change intended"
                           " outside of the generated data." % (path.rsplit("/", 1)[-1].split(".")[0], variant))
        m = self.commit("refs/heads/main", author, adate, author, cdate, msg, [(path, f)])
        self.stats["big"] += 1
        self.main.tip = m
        self.main_marks.append(m)
        self.after_main_commit(m, cdate)

    # ---- topics
    class Topic:
        pass

    def start_topic(self):
        r, st = self.r, self.main.state
        dirs = {}
        for p in st:
            if "/" in p and self.eligible(st, p, None):
                dirs.setdefault(p.rsplit("/", 1)[0], []).append(p)
        cand = sorted(d for d, ps in dirs.items() if len(ps) >= 3)
        if not cand:
            return False
        d = r.pick(cand)
        t = Gen.Topic()
        t.author = self.author()
        handle = re.sub(r"[^a-z0-9]+", "", t.author[1].split("@")[0].lower()) or "dev"
        base = "%s/%s-%s-%s" % (handle, d.rsplit("/", 1)[-1], r.pick(NOUNS), r.pick(VERBS))
        name, i = base, 2
        while name in self.topic_names:
            name, i = "%s-%d" % (base, i), i + 1
        self.topic_names.add(name)
        t.name, t.ref, t.dir = name, "refs/heads/" + name, d
        t.state = dict(st)
        t.changed = set()
        t.pool = list(dirs[d])
        for p in t.pool:
            self.reserved[p] = t
        t.remaining = r.between(1, 9)
        t.subjects = []
        t.tip = None
        t.base = self.main.tip
        self.topics.append(t)
        self.topic_commit(t)
        return True

    def topic_commit(self, t):
        r, st = self.r, t.state
        adate, cdate = self.tick()
        author = t.author
        changes = None
        x = r.below(100)
        if x < 6:
            res = self.rename_change(st, t, t.pool)
            if res:
                changes, what = res
                subj = "%s: %s" % (area_of(changes[1][0]), what)
                t.pool = [p for p in t.pool if p in st] + [changes[1][0]]
        elif x < 14:
            res = self.new_file_change(st, t, t.dir)
            if res:
                changes, what = res
                subj = "%s: %s" % (area_of(changes[0][0]), what)
                t.pool.append(changes[0][0])
        if not changes:
            paths = self.pick_files(st, t, t.pool)[:4]
            changes = self.edit_changes(st, paths)
            t.changed.update(paths)
            subj = self.subject(area_of(paths[0]), paths[0], author)
        msg = self.message(subj, author, author)
        m = self.commit(t.ref, author, adate, author, cdate, msg, changes, frm=t.base if t.tip is None else None)
        t.tip = m
        t.subjects.append(subj)
        t.remaining -= 1
        self.stats["topic_commits"] += 1

    def merge_topic(self, t):
        r, st = self.r, self.main.state
        self.topics.remove(t)
        changes = []
        for p in sorted(t.changed):
            if p in t.state:
                st[p] = t.state[p]
                changes.append((p, st[p]))
            elif p in st:
                del st[p]
                changes.append((p, None))
        for p in [p for p, o in self.reserved.items() if o is t]:
            del self.reserved[p]
        adate, cdate = self.tick()
        m0 = AUTHORS[r.pick(MAINTAINERS)]
        msg = "Merge branch '%s'\n\n%s\n\n* %s:\n%s\n" % (
            t.name, "\n".join(paragraph(r, n=r.between(1, 3))), t.name,
            "\n".join("  " + s for s in reversed(t.subjects)))
        m = self.commit("refs/heads/main", m0, cdate, m0, cdate, msg, changes, merge=t.tip)
        self.stats["merges"] += 1
        self.merged_topics.append(t)
        self.main.tip = m
        self.main_marks.append(m)
        self.after_main_commit(m, cdate)

    # ---- stable branches
    def start_stable(self, tagname):
        t = Gen.Topic()
        t.name = "stable-%s.y" % tagname[1:]
        t.ref = "refs/heads/" + t.name
        t.state = dict(self.main.state)
        t.tip = self.main.tip
        t.version = tagname
        t.point = 0
        self.reset(t.ref, t.tip)
        self.stables.append(t)

    def stable_commit(self, s):
        r, st = self.r, s.state
        adate, cdate = self.tick()
        author = self.author()
        committer = AUTHORS[r.pick(MAINTAINERS)]
        cand = sorted(p for p in st if st[p].editable())
        paths = r.sample(cand, r.between(1, 3))
        changes = self.edit_changes(st, paths)
        up = r.pick(self.recent_subjects) if self.recent_subjects else self.subject(area_of(paths[0]))
        msg = "%s\n\n[ Upstream commit %s ]\n\n%s\n" % (up, r.hexstr(40), self.body(author, committer))
        s.tip = self.commit(s.ref, author, adate, committer, cdate, msg, changes)
        self.stats["stable_commits"] += 1
        if self.tags_stable < self.T_stable * self.count // self.N:
            s.point += 1
            name = "%s.%d" % (s.version, s.point)
            self.tag_commit(name, s.tip, cdate, [up])
            self.tags_stable += 1

    # ---- tags
    def tag_message(self, name, subjects):
        r = self.r
        msg = "shellac %s\n\n" % name
        if subjects:
            msg += "Highlights:\n" + "".join("  - %s\n" % s for s in subjects[-r.between(3, 8):])
        if r.chance(1, 3):
            sig = base64.b64encode(r.randbytes(r.between(400, 560))).decode()
            msg += "-----BEGIN PGP SIGNATURE-----\n\n" + "\n".join(sig[i:i + 64] for i in range(0, len(sig), 64))
            msg += "\n=%s\n-----END PGP SIGNATURE-----\n" % base64.b64encode(r.randbytes(3)).decode()
        return msg

    def tag_commit(self, name, target, cdate, subjects):
        tagger = AUTHORS[0]
        tm = self.annotated_tag(name, target, tagger, cdate + self.r.between(60, 2 * 86400),
                                self.tag_message(name, subjects))
        self.stats["tags"] += 1
        return tm

    def next_version(self):
        if self.minor >= self.minor_cap:
            self.major += 1
            self.minor = 0
            self.minor_cap = self.r.between(max(2, self.per_major // 2), max(3, self.per_major * 3 // 2))
        else:
            self.minor += 1
        return "v%d.%d" % (self.major, self.minor)

    def after_main_commit(self, m, cdate):
        r = self.r
        while self.tags_main < self.T_main * self.count // self.N:
            name = self.next_version()
            tm = self.tag_commit(name, m, cdate, self.recent_subjects)
            self.tags_main += 1
            if self.tags_main in self.tag_on_tag_at:
                self.annotated_tag("archive/" + name, tm, AUTHORS[0], cdate + 3 * 86400,
                                   "Archived copy of the %s release tag.\n" % name)
                self.stats["tag_on_tag"] += 1
            if len(self.stables) < self.n_stable and self.count >= self.stable_at[len(self.stables)]:
                self.start_stable(name)
        while self.light_k < len(self.light_at) and self.count >= self.light_at[self.light_k]:
            day = time.strftime("%Y%m%d", time.gmtime(cdate))
            nm = "snapshot-%s" % day if self.light_k < len(self.light_at) - 1 else "last-known-good"
            while nm in self.light_names:
                nm += "-2"
            self.light_names.add(nm)
            self.reset("refs/tags/" + nm, m)
            self.light_k += 1
            self.stats["light_tags"] += 1

    # ---- main loop
    def run(self):
        r, N = self.r, self.N
        if N < 60:
            raise SystemExit("stream.py: --commits must be >= 60")
        self.main = Gen.Topic()
        self.main.state = initial_tree(r, self.used)
        self.main_marks = []
        self.topics, self.merged_topics, self.stables, self.topic_names = [], [], [], set()
        rem = self.B - 1
        self.n_stable = min(6, rem // 3) if self.T >= 10 else 0
        self.allowed_unmerged = max(0, min(3, rem - self.n_stable))
        self.T_stable = self.T // 10 if self.n_stable else 0
        self.T_main = self.T - self.T_stable
        self.tags_main = self.tags_stable = 0
        self.major, self.minor = 0, 0
        self.per_major = max(3, self.T_main // 12)
        self.minor_cap = self.per_major
        self.tag_on_tag_at = {self.T_main // 2, self.T_main * 3 // 4} if self.T_main >= 4 else set()
        self.stable_at = [N * (i + 1) // (self.n_stable + 2) for i in range(self.n_stable)]
        n_big = max(5, N // 2500)
        self.big_at = [N * (i + 1) // (n_big + 1) + r.below(max(1, N // (4 * n_big))) for i in range(n_big)]
        n_l1 = max(4, N // 2500)
        self.latin1_at = [N * (2 * i + 1) // (2 * n_l1) for i in range(n_l1)]
        self.light_at = [N * 3 // 10, N * 6 // 10, N * 9 // 10, N - 1]
        self.light_k = 0
        self.light_names = set()
        self.w(b"feature done\n")

        # the initial import
        a = AUTHORS[0]
        _, cdate = self.tick()
        msg = self.message("Initial import", a, a, "\n".join(paragraph(r, n=4)))
        m = self.commit("refs/heads/main", a, cdate, a, cdate, msg, sorted(self.main.state.items()))
        self.main.tip = m
        self.main_marks.append(m)
        self.after_main_commit(m, cdate)

        # topics must be merged in time: each open topic beyond the allowed ones needs one commit
        while self.count < N:
            left = N - self.count
            excess = len(self.topics) - self.allowed_unmerged
            due = [t for t in self.topics if t.remaining <= 0]
            if excess > 0 and left <= excess:
                self.merge_topic(self.topics[0])
                continue
            if due and r.chance(1, 2):
                self.merge_topic(due[0])
                continue
            if self.stats["big"] < len(self.big_at) and self.count >= self.big_at[self.stats["big"]]:
                self.big_commit()
                continue
            x = r.below(1000)
            if not self.topic_names and self.count >= N // 4:
                x = 0                               # at least one topic (hence one merge)
            if x < 17 and len(self.topics) < 3 and left > 12:
                if self.start_topic():
                    continue
            if x >= 17 and x < 170 and self.topics:
                t = r.pick(self.topics)
                if t.remaining > 0 or r.chance(1, 4):
                    self.topic_commit(t)
                    continue
            if 170 <= x < 200 and self.stables:
                self.stable_commit(r.pick(self.stables))
                continue
            self.main_commit()

        # tags still owed (the last steps were not on main): on the main tip
        while self.tags_main + self.tags_stable < self.T:
            name = self.next_version()
            self.tag_commit(name, self.main.tip, self.now, self.recent_subjects)
            self.tags_main += 1

        # branches: open topics stay, some merged topics are kept as stale branches, then pointers
        keep_open = self.topics[:self.allowed_unmerged]
        left = max(0, self.B - 1 - len(self.stables) - len(keep_open))
        n_stale = min(left // 2, len(self.merged_topics))
        stale = r.sample(self.merged_topics, n_stale)
        stale_names = {t.name for t in stale}
        for t in self.merged_topics:
            if t.name not in stale_names:
                self.reset(t.ref, None)
        n_ptr = left - n_stale
        used_names = set()
        for i in range(n_ptr):
            while True:
                nm = "archive/%s-%s" % (r.pick(PROSE_ADJS), r.pick(NOUNS))
                if nm not in used_names:
                    break
            used_names.add(nm)
            self.reset("refs/heads/" + nm, r.pick(self.main_marks))
        self.w(b"done\n")
        self.out.flush()
        st = self.stats
        st.update(commits=self.count, files_at_main=len(self.main.state), open_topics=len(keep_open),
                  stable_branches=len(self.stables), stale_branches=n_stale, pointer_branches=n_ptr,
                  branches=1 + len(self.stables) + len(keep_open) + n_stale + n_ptr,
                  first_date=1262304000, last_date=self.now)
        for k in sorted(st):
            print("%s=%s" % (k, st[k]), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=20000)
    ap.add_argument("--tags", type=int, default=1000)
    ap.add_argument("--branches", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.branches < 1 or args.tags < 0:
        raise SystemExit("stream.py: --branches must be >= 1 and --tags >= 0")
    Gen(args).run()


if __name__ == "__main__":
    main()
