#!/usr/bin/env python3
"""Checks shellac's module borders; the build runs it and fails on a violation.

Every quoted include names its module from the repository root ("cache/store.h"). A module may
include its own headers, and of another module only that module's contract headers, and only if
it is one of the modules it builds on (MODULES below, the layering of docs/ARCHITECTURE.md).
Tests and fuzz targets are white-box: they may include any header of any module. A library's C
headers stay in the modules that wrap them (LIBRARIES).

Usage: check_borders.py SOURCE-ROOT [STAMP]   (writes STAMP when everything is within its borders)
"""
import os
import re
import sys

# module -> (its contract headers, the modules it builds on). base/ is for everyone.
MODULES = {
    'base': ({'*'}, set()),
    'conf': ({'conf/config.h'}, {'base'}),
    'cache': ({'cache/cache.h'}, {'base'}),
    'esi': ({'esi/esi.h'}, {'base'}),
    'gitfrag': ({'gitfrag/gitfrag.h'}, {'base', 'conf'}),
    'ctl': ({'ctl/ctl.h'}, {'base'}),
    'proxy': (set(), {'base', 'conf', 'cache', 'esi', 'gitfrag', 'ctl'}),
}
WHITE_BOX = {'tests', 'fuzz'}
# a C library's include prefix -> the modules that may include it directly
LIBRARIES = {
    'git2': {'gitfrag'},
    'event2/': {'proxy'},
    'openssl/': {'proxy'},
    'libmemcached': {'cache'},
    'isa-l/': {'gitfrag', 'cache'},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')


def check_file(root, path, module):
    problems = []
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            where = f'{path}:{number}'
            if kind == '<':
                for prefix, allowed in LIBRARIES.items():
                    if name.startswith(prefix) and module not in allowed | WHITE_BOX:
                        problems.append(f'{where}: includes <{name}>, which only '
                                        f'{", ".join(sorted(allowed))}/ may include')
                continue
            target = name.split('/', 1)[0] if '/' in name else None
            if target not in MODULES and target not in WHITE_BOX:
                problems.append(f'{where}: include "{name}" does not name its module '
                                f'(write "MODULE/{name.rsplit("/", 1)[-1]}")')
                continue
            if not os.path.exists(os.path.join(root, name)):
                problems.append(f'{where}: "{name}" does not exist')
                continue
            if target == module or module in WHITE_BOX:
                continue
            contract, uses = MODULES.get(module, (set(), set()))
            if target not in uses:
                problems.append(f'{where}: {module}/ includes "{name}", but {module}/ does not build '
                                f'on {target}/ (it builds on: {", ".join(sorted(uses)) or "nothing"})')
                continue
            target_contract = MODULES[target][0]
            if '*' not in target_contract and name not in target_contract:
                problems.append(f'{where}: "{name}" is internal to {target}/; include its contract: '
                                f'{", ".join(sorted(target_contract))}')
    return problems


def main():
    root = sys.argv[1]
    problems = []
    for module in sorted(set(MODULES) | WHITE_BOX):
        folder = os.path.join(root, module)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(('.cc', '.h')):
                problems += check_file(root, f'{module}/{name}', module)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f'{len(problems)} include(s) cross a module border (see tools/check_borders.py)',
              file=sys.stderr)
        return 1
    if len(sys.argv) > 2:
        with open(sys.argv[2], 'w') as f:
            f.write('ok\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
