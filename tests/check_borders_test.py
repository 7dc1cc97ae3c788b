#!/usr/bin/env python3
"""tools/check_borders.py: what it refuses (with file:line) and that the real tree passes."""
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get('SHELLAC_SOURCE', os.path.join(os.path.dirname(__file__), '..'))
CHECKER = os.path.join(SOURCE, 'tools', 'check_borders.py')


def run(root):
    p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
    return p.returncode, p.stderr


class Borders(unittest.TestCase):
    def tree(self, files):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        base = {'cache/cache.h': '', 'cache/hash.h': '', 'gitfrag/gitfrag.h': '', 'conf/config.h': '',
                'proxy/a.h': ''}
        for name, text in {**base, **files}.items():
            path = os.path.join(d.name, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
        return d.name

    def assert_refused(self, files, expected):
        rc, err = run(self.tree(files))
        self.assertEqual(rc, 1, err)
        self.assertIn(expected, err)

    def test_the_real_tree_is_within_its_borders(self):
        rc, err = run(SOURCE)
        self.assertEqual(rc, 0, err)

    def test_contract_of_another_module_is_allowed(self):
        rc, err = run(self.tree({'proxy/b.cc': '#include "proxy/a.h"\n#include "cache/cache.h"\n'}))
        self.assertEqual(rc, 0, err)

    def test_internal_header_of_another_module(self):
        self.assert_refused({'proxy/b.cc': '// x\n#include "cache/hash.h"\n'},
                            'proxy/b.cc:2: "cache/hash.h" is internal to cache/; include its contract: '
                            'cache/cache.h')

    def test_include_without_its_module(self):
        self.assert_refused({'cache/b.cc': '#include "hash.h"\n'},
                            'cache/b.cc:1: include "hash.h" does not name its module')

    def test_a_module_it_does_not_build_on(self):
        self.assert_refused({'cache/b.cc': '#include "gitfrag/gitfrag.h"\n'},
                            'cache/b.cc:1: cache/ includes "gitfrag/gitfrag.h", but cache/ does not build '
                            'on gitfrag/')

    def test_a_header_that_does_not_exist(self):
        self.assert_refused({'proxy/b.cc': '#include "cache/nothing.h"\n'},
                            'proxy/b.cc:1: "cache/nothing.h" does not exist')

    def test_a_library_outside_its_wrapper(self):
        self.assert_refused({'proxy/b.cc': '#include <git2.h>\n'},
                            'proxy/b.cc:1: includes <git2.h>, which only gitfrag/ may include')

    def test_tests_are_white_box(self):
        rc, err = run(self.tree({'tests/t.cc': '#include "cache/hash.h"\n#include <git2.h>\n'}))
        self.assertEqual(rc, 0, err)


if __name__ == '__main__':
    unittest.main()
