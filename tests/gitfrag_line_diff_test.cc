// The own line diff (gitfrag/line_diff.h) against xdiff: libgit2's (git_diff_buffers, xdiff
// without context) on thousands of generated file pairs, and git's own (`git diff --no-index -U0
// --no-indent-heuristic`, which cuts the common tail first, as blame's diffs do) on hundreds.
// The pairs have what moves xdiff's heuristics: repeated and blank lines (many matches), lines
// with no match, last lines without a newline, CRLF next to LF, empty files, long edit scripts
// (the cost limits) and long equal runs among them; and the project's own sources, edited.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gitfrag/git.h"
#include "gitfrag/line_diff.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

using test::Shell;
using test::ShellQuote;
using test::TempDir;

std::string Show(const std::vector<LineHunk>& hunks) {
  std::ostringstream out;
  for (const LineHunk& h : hunks)
    out << "-" << h.a << "," << h.a_count << " +" << h.b << "," << h.b_count << "\n";
  return out.str();
}

int OnHunk(const git_diff_delta*, const git_diff_hunk* h, void* payload) {
  auto* hunks = static_cast<std::vector<LineHunk>*>(payload);
  LineHunk hunk;
  hunk.a_count = static_cast<size_t>(h->old_lines);
  hunk.a = static_cast<size_t>(h->old_lines ? h->old_start - 1 : h->old_start);
  hunk.b_count = static_cast<size_t>(h->new_lines);
  hunk.b = static_cast<size_t>(h->new_lines ? h->new_start - 1 : h->new_start);
  hunks->push_back(hunk);
  return 0;
}

std::vector<LineHunk> Libgit2Hunks(const std::string& a, const std::string& b,
                                   bool minimal = false, bool indent = false) {
  git_diff_options options = GIT_DIFF_OPTIONS_INIT;
  options.context_lines = 0;
  options.interhunk_lines = 0;
  options.flags = GIT_DIFF_FORCE_TEXT | (minimal ? GIT_DIFF_MINIMAL : 0) |
                  (indent ? GIT_DIFF_INDENT_HEURISTIC : 0);
  std::vector<LineHunk> hunks;
  EXPECT_EQ(git_diff_buffers(a.data(), a.size(), nullptr, b.data(), b.size(), nullptr, &options,
                             nullptr, nullptr, OnHunk, nullptr, &hunks),
            0);
  return hunks;
}

std::vector<LineHunk> OwnHunks(const std::string& a, const std::string& b, bool blame,
                               bool minimal = false, bool indent = false) {
  const LineIndex la = IndexLines(a), lb = IndexLines(b);
  LineDiffer differ;
  std::vector<LineHunk> hunks;
  if (blame)
    differ.BlameDiff(la, lb, &hunks);
  else
    differ.Diff(la, la.size(), lb, lb.size(), &hunks, minimal, indent);
  return hunks;
}

// Lines drawn from a small vocabulary (so many repeat), some unique, some blank.
class Texts {
 public:
  explicit Texts(uint32_t seed) : rng_(seed) {}

  std::string Line(size_t vocabulary) {
    const size_t k = Pick(vocabulary + 3);
    std::string line;
    if (k == vocabulary) line = "";                                  // blank
    else if (k == vocabulary + 1) line = "}";                        // a repeated brace
    else if (k == vocabulary + 2) line = "unique " + std::to_string(unique_++);
    else line = "line " + std::to_string(k);
    return line + (Pick(20) == 0 ? "\r\n" : "\n");
  }

  std::vector<std::string> Lines(size_t n, size_t vocabulary) {
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) out.push_back(Line(vocabulary));
    return out;
  }

  // `edits` random edits: blocks deleted, inserted, duplicated, moved, replaced; blank lines and
  // CRLF endings put in.
  std::vector<std::string> Edit(std::vector<std::string> lines, size_t edits, size_t vocabulary) {
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = Pick(lines.size() + 1);
      const size_t len = 1 + Pick(Pick(3) == 0 ? 40 : 5);
      const size_t end = std::min(lines.size(), at + len);
      switch (Pick(7)) {
        case 0:
          lines.erase(lines.begin() + static_cast<long>(at), lines.begin() + static_cast<long>(end));
          break;
        case 1: {
          const std::vector<std::string> added = Lines(len, vocabulary);
          lines.insert(lines.begin() + static_cast<long>(at), added.begin(), added.end());
          break;
        }
        case 2: {
          const std::vector<std::string> copy(lines.begin() + static_cast<long>(at),
                                              lines.begin() + static_cast<long>(end));
          const size_t to = Pick(lines.size() + 1);
          lines.insert(lines.begin() + static_cast<long>(to), copy.begin(), copy.end());
          break;
        }
        case 3: {
          const std::vector<std::string> moved(lines.begin() + static_cast<long>(at),
                                               lines.begin() + static_cast<long>(end));
          lines.erase(lines.begin() + static_cast<long>(at), lines.begin() + static_cast<long>(end));
          const size_t to = Pick(lines.size() + 1);
          lines.insert(lines.begin() + static_cast<long>(to), moved.begin(), moved.end());
          break;
        }
        case 4:
          for (size_t i = at; i < end; ++i) lines[i] = Line(vocabulary);
          break;
        case 5:
          lines.insert(lines.begin() + static_cast<long>(at), Pick(3) + 1, "\n");
          break;
        case 6:
          for (size_t i = at; i < end; ++i)
            if (lines[i].size() >= 1 && lines[i].back() == '\n' &&
                (lines[i].size() < 2 || lines[i][lines[i].size() - 2] != '\r'))
              lines[i].insert(lines[i].size() - 1, "\r");
          break;
      }
    }
    return lines;
  }

  // The lines joined; sometimes the last one loses its newline.
  std::string Join(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines) out += l;
    if (!out.empty() && Pick(4) == 0) {
      out.pop_back();
      if (!out.empty() && out.back() == '\r' && Pick(2) == 0) out.pop_back();
    }
    return out;
  }

  // Unique lines with blank lines and braces among them (a `blank` in 100 of them each): lines
  // with many matches amid lines with none, as xdiff's discarding of such runs needs.
  std::vector<std::string> Sparse(size_t n, size_t blank) {
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) {
      const size_t k = Pick(100);
      out.push_back(k < blank ? "\n" : k < blank + blank / 2 ? "}\n" : "u " + std::to_string(unique_++) + "\n");
    }
    return out;
  }

  // Blocks of `lines` replaced by new sparse lines, `edits` times, far apart on average.
  std::vector<std::string> Replace(std::vector<std::string> lines, size_t edits, size_t blank,
                                   size_t longest) {
    for (size_t e = 0; e < edits && !lines.empty(); ++e) {
      const size_t at = Pick(lines.size());
      const size_t end = std::min(lines.size(), at + Pick(longest + 1));
      const std::vector<std::string> fresh = Sparse(Pick(longest + 1), blank);
      lines.erase(lines.begin() + static_cast<long>(at), lines.begin() + static_cast<long>(end));
      lines.insert(lines.begin() + static_cast<long>(at), fresh.begin(), fresh.end());
    }
    return lines;
  }

  size_t Pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  std::mt19937 rng_;
  size_t unique_ = 0;
};

// Pairs of every kind: (size, vocabulary, edits) from tiny to thousands of lines.
std::vector<std::pair<std::string, std::string>> Pairs(uint32_t seed, size_t count) {
  Texts t(seed);
  std::vector<std::pair<std::string, std::string>> pairs;
  // Hand-made ones first.
  pairs.push_back({"", ""});
  pairs.push_back({"", "a\n"});
  pairs.push_back({"a\n", ""});
  pairs.push_back({"a", "a\n"});
  pairs.push_back({"a\n", "a"});
  pairs.push_back({"a\r\n", "a\n"});
  pairs.push_back({"x\nx\nx\n", "x\nx\n"});
  pairs.push_back({"x\ny\nx\ny\n", "x\ny\nx\ny\nx\ny\n"});
  pairs.push_back({"\n\n\n", "\n\na\n\n"});
  pairs.push_back({"a\nb\nc\n", "c\nb\na\n"});
  pairs.push_back({"{\n}\n{\n}\n", "{\n}\n{\n}\n{\n}\n"});
  for (size_t i = 0; i < count; ++i) {
    size_t n = 0, vocabulary = 0, edits = 0;
    switch (t.Pick(6)) {
      case 0: n = t.Pick(12); vocabulary = 1 + t.Pick(4); edits = t.Pick(4); break;
      case 1: n = t.Pick(80); vocabulary = 2 + t.Pick(20); edits = 1 + t.Pick(8); break;
      case 2: n = t.Pick(400); vocabulary = 5 + t.Pick(200); edits = 1 + t.Pick(30); break;
      case 3: n = 500 + t.Pick(1500); vocabulary = 3 + t.Pick(30); edits = 20 + t.Pick(200); break;
      case 4: n = 1000 + t.Pick(3000); vocabulary = 500 + t.Pick(3000); edits = 100 + t.Pick(400); break;
      case 5: n = 200 + t.Pick(800); vocabulary = 2 + t.Pick(6); edits = 1 + t.Pick(10); break;
    }
    if (t.Pick(5) == 0) {
      // Sparse texts: long runs of lines without a match (replaced blocks) with blank lines in
      // them, or big files with edits far apart (long equal runs between many changes).
      const size_t blank = 3 + t.Pick(30);
      if (t.Pick(3) == 0) {
        const std::vector<std::string> a = t.Sparse(3000 + t.Pick(12000), blank);
        pairs.push_back({t.Join(a), t.Join(t.Replace(a, 200 + t.Pick(400), blank, 6))});
      } else {
        const std::vector<std::string> a = t.Sparse(100 + t.Pick(5000), blank);
        pairs.push_back({t.Join(a), t.Join(t.Replace(a, 1 + t.Pick(30), blank, 300))});
      }
      continue;
    }
    const std::vector<std::string> a = t.Lines(n, vocabulary);
    // Mostly an edited copy; sometimes an unrelated text (the longest edit scripts).
    const std::vector<std::string> b =
        t.Pick(8) == 0 ? t.Lines(t.Pick(n + 1), vocabulary) : t.Edit(a, edits, vocabulary);
    pairs.push_back({t.Join(a), t.Join(b)});
  }
  return pairs;
}

TEST(LineDiff, IndexLines) {
  const LineIndex x = IndexLines("a\r\nb\n\nlast");
  ASSERT_EQ(x.size(), 4u);
  EXPECT_EQ(x.line(0), "a\r\n");
  EXPECT_EQ(x.line(1), "b\n");
  EXPECT_EQ(x.line(2), "\n");
  EXPECT_EQ(x.line(3), "last");
  EXPECT_NE(x.hashes[0], x.hashes[1]);
  EXPECT_EQ(IndexLines("").size(), 0u);
  EXPECT_EQ(IndexLines("b\n").hashes[0], x.hashes[1]);
}

// Indexing a blob like another one gives the index made from scratch, whatever the two share:
// edges where a shared run ends inside a line, a last line without a newline on either side,
// one text inside the other, empty texts, and the generated pairs both ways.
TEST(LineDiff, IndexLinesLikeEqualsIndexLines) {
  auto expect_same = [](const std::string& bytes, const std::string& known_bytes) {
    const LineIndex known = IndexLines(known_bytes);
    const LineIndex like = IndexLinesLike(bytes, known), scratch = IndexLines(bytes);
    EXPECT_EQ(like.ends, scratch.ends) << bytes << " like " << known_bytes;
    EXPECT_EQ(like.hashes, scratch.hashes) << bytes << " like " << known_bytes;
  };
  const std::vector<std::string> texts = {
      "", "\n", "a", "a\n", "ab\n", "a\nb", "a\nb\n", "a\nxb\n", "a\nbx\n", "ab\ncd\n",
      "ab\nxcd\n", "ab\ncdx", "x\nab\ncd\n", "ab\ncd\nx", "ab\ncd", "ab\n\ncd\n", "cd\n",
      "ab\ncd\nab\ncd\n", "a\nb\nc\nd\ne\n", "a\nb\nX\nd\ne\n", "a\nb\nd\ne\n"};
  for (const std::string& x : texts)
    for (const std::string& y : texts) expect_same(x, y);
  for (const auto& [a, b] : Pairs(20261203, 500)) {
    expect_same(a, b);
    expect_same(b, a);
  }
  // Long texts changed at the head, the tail and in between (the middle between the shared head
  // and tail is mostly the other's lines): blocks put in and taken out (more lines than
  // AppendLinesLike's window), lines replaced, repeated and blank lines, a last line without a
  // newline.
  Texts t(31);
  for (int i = 0; i < 300; ++i) {
    const std::vector<std::string> a = t.Lines(50 + t.Pick(2000), 1 + t.Pick(i % 2 == 0 ? 5 : 400));
    std::vector<std::string> b = a;
    if (!b.empty()) b.front() = "head " + std::to_string(i) + "\n";
    if (b.size() > 1) b.back() = i % 3 == 0 ? "tail" : "tail\n";
    for (size_t e = 0, edits = t.Pick(6); e < edits && b.size() > 2; ++e) {
      const size_t at = 1 + t.Pick(b.size() - 2);
      const size_t len = 1 + t.Pick(t.Pick(2) == 0 ? 150 : 4);
      if (t.Pick(2) == 0) {
        b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(std::min(b.size() - 1, at + len)));
      } else {
        const std::vector<std::string> added = t.Lines(len, 1 + t.Pick(8));
        b.insert(b.begin() + static_cast<long>(at), added.begin(), added.end());
      }
    }
    const std::string sa = t.Join(a), sb = t.Join(b);
    expect_same(sa, sb);
    expect_same(sb, sa);
  }
}

// The hunks equal libgit2's xdiff's on every pair.
TEST(LineDiff, EqualsLibgit2OnGeneratedPairs) {
  EnsureLibgit2();
  size_t compared = 0, heuristic = 0;
  for (const auto& [a, b] : Pairs(20261202, 2000)) {
    const std::vector<LineHunk> ours = OwnHunks(a, b, false), theirs = Libgit2Hunks(a, b);
    ASSERT_EQ(Show(ours), Show(theirs)) << "pair " << compared << "\n--- a\n" << a << "\n--- b\n"
                                        << b;
    ++compared;
    if (ours.size() > 256) ++heuristic;
  }
  EXPECT_GT(heuristic, 20u) << "long edit scripts (the cost limits) are among the pairs";
}

// With XDF_NEED_MINIMAL (cgit's commit and diff pages) the hunks equal libgit2's minimal ones, and
// on the long edit scripts they are not the heuristic search's.
TEST(LineDiff, MinimalEqualsLibgit2sMinimal) {
  EnsureLibgit2();
  size_t compared = 0, differ = 0;
  for (const auto& [a, b] : Pairs(20261203, 1200)) {
    const std::vector<LineHunk> ours = OwnHunks(a, b, false, true);
    ASSERT_EQ(Show(ours), Show(Libgit2Hunks(a, b, true)))
        << "pair " << compared << "\n--- a\n" << a << "\n--- b\n" << b;
    ++compared;
    if (Show(ours) != Show(OwnHunks(a, b, false, false))) ++differ;
  }
  EXPECT_GT(differ, 10u) << "pairs where the minimal search gives other hunks";
}

// Lines only added or only removed (one side's middle empty: the diff takes no classes, every
// line between the equal ends is changed, then slid as xdiff slides): a block put into or taken
// out of texts of few distinct lines, where the sliding decides where the block ends up.
TEST(LineDiff, OnlyAddedOrOnlyRemovedLinesEqualLibgit2) {
  EnsureLibgit2();
  Texts t(20261204);
  for (int i = 0; i < 600; ++i) {
    const size_t vocabulary = 1 + t.Pick(i % 3 == 0 ? 3 : 40);
    const std::vector<std::string> a = t.Lines(t.Pick(300), vocabulary);
    const std::vector<std::string> block = t.Lines(1 + t.Pick(i % 4 == 0 ? 200 : 6), vocabulary);
    std::vector<std::string> b = a;
    b.insert(b.begin() + static_cast<long>(t.Pick(a.size() + 1)), block.begin(), block.end());
    const std::string sa = t.Join(a), sb = t.Join(b);
    ASSERT_EQ(Show(OwnHunks(sa, sb, false)), Show(Libgit2Hunks(sa, sb))) << sa << "\n---\n" << sb;
    ASSERT_EQ(Show(OwnHunks(sb, sa, false)), Show(Libgit2Hunks(sb, sa))) << sb << "\n---\n" << sa;
  }
}

// Small changes to long texts of few distinct lines: the middle's classes are counted with the
// lines at the equal ends, and each class's count there decides whether its lines have none, some
// or many matches (from ~sqrt of the lines). Some middles are large rewrites of unique lines.
TEST(LineDiff, SmallChangesToLongTextsEqualLibgit2) {
  EnsureLibgit2();
  Texts t(20261203);
  for (int i = 0; i < 400; ++i) {
    const size_t vocabulary = 1 + t.Pick(i % 2 == 0 ? 4 : 60);
    std::vector<std::string> a = t.Lines(300 + t.Pick(3000), vocabulary);
    if (i % 10 == 0) {  // a large middle: thousands of unique lines replaced
      const size_t at = t.Pick(a.size()), n = 600 + t.Pick(1200);
      for (size_t k = 0; k < n; ++k)
        a.insert(a.begin() + static_cast<long>(at), "old " + std::to_string(i) + "." + std::to_string(k) + "\n");
    }
    std::vector<std::string> b = a;
    const size_t at = t.Pick(a.size()), len = std::min<size_t>(a.size() - at, 1 + t.Pick(4));
    const std::vector<std::string> block = t.Lines(1 + t.Pick(4), vocabulary);
    b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + len));
    b.insert(b.begin() + static_cast<long>(at), block.begin(), block.end());
    if (i % 10 == 0)
      for (std::string& line : b)
        if (line.starts_with("old ")) line[0] = 'n';
    const std::string sa = t.Join(a), sb = t.Join(b);
    ASSERT_EQ(Show(OwnHunks(sa, sb, false)), Show(Libgit2Hunks(sa, sb))) << i;
    ASSERT_EQ(Show(OwnHunks(sb, sa, false)), Show(Libgit2Hunks(sb, sa))) << i;
  }
}

// Long texts with a few changes far apart (the runs of unchanged lines between them, of other
// lengths on each side, are stepped over at once when groups are slid and hunks read off): some
// changes sit among repeated lines, where a group slides up and down and lines up with the other
// side's change; with and without the indent heuristic, heuristic and minimal search.
TEST(LineDiff, FewChangesFarApartEqualLibgit2) {
  EnsureLibgit2();
  Texts t(20261206);
  size_t slid = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<std::string> a = t.Lines(500 + t.Pick(4000), 100000);
    std::vector<std::string> b = a;
    for (size_t e = 0, edits = 1 + t.Pick(12); e < edits && b.size() > 8; ++e) {
      const size_t at = t.Pick(b.size() - 4);
      switch (t.Pick(5)) {
        case 0:  // a repeated line put in beside its equals: the group can slide
          b.insert(b.begin() + static_cast<long>(at), 1 + t.Pick(3), b[at]);
          ++slid;
          break;
        case 4:  // the same, next to a changed line: the group lines up with that change
          b.insert(b.begin() + static_cast<long>(at + 1), 1 + t.Pick(3), b[at + 1]);
          b[at] = "beside " + std::to_string(i) + "." + std::to_string(e) + "\n";
          ++slid;
          break;
        case 1:  // lines taken out
          b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + 1 + t.Pick(3)));
          break;
        case 2:  // a line replaced
          b[at] = "changed " + std::to_string(i) + "." + std::to_string(e) + "\n";
          break;
        default: {  // a block of few distinct lines put in
          const std::vector<std::string> block = t.Lines(1 + t.Pick(30), 3);
          b.insert(b.begin() + static_cast<long>(at), block.begin(), block.end());
        }
      }
    }
    const std::string sa = t.Join(a), sb = t.Join(b);
    for (const bool minimal : {false, true})
      for (const bool indent : {false, true}) {
        ASSERT_EQ(Show(OwnHunks(sa, sb, false, minimal, indent)),
                  Show(Libgit2Hunks(sa, sb, minimal, indent)))
            << i << " minimal " << minimal << " indent " << indent;
        ASSERT_EQ(Show(OwnHunks(sb, sa, false, minimal, indent)),
                  Show(Libgit2Hunks(sb, sa, minimal, indent)))
            << i << " minimal " << minimal << " indent " << indent;
      }
  }
  EXPECT_GT(slid, 100u);
}

// The project's own sources, each edited at random, against libgit2's xdiff.
TEST(LineDiff, EqualsLibgit2OnEditedSources) {
  const char* source = std::getenv("SHELLAC_SOURCE");
  if (source == nullptr) GTEST_SKIP() << "SHELLAC_SOURCE is not set";
  EnsureLibgit2();
  Texts t(7);
  size_t compared = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(source) / "gitfrag")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l + "\n");
    for (int round = 0; round < 3; ++round) {
      const std::string a = t.Join(lines);
      const std::string b = t.Join(t.Edit(lines, 1 + t.Pick(round == 2 ? 60 : 6), 40));
      ASSERT_EQ(Show(OwnHunks(a, b, false)), Show(Libgit2Hunks(a, b))) << entry.path();
      ++compared;
    }
  }
  EXPECT_GT(compared, 60u);
}

// Code-like texts: functions of indented statements, nested blocks closed by braces, blank lines
// between and inside them (some of white space alone), tabs and spaces, comments. Edits that make
// groups the indent heuristic places: functions added, removed, moved and duplicated next to
// similar ones, blocks re-indented, blank lines added and removed, statements changed.
class Code {
 public:
  explicit Code(uint32_t seed) : t_(seed) {}

  std::vector<std::string> Function(int depth) {
    std::vector<std::string> out;
    const std::string pad = Pad(depth);
    out.push_back(pad + "int f" + std::to_string(t_.Pick(6)) + "(void)\n");
    out.push_back(pad + "{\n");
    Body(depth + 1, &out);
    out.push_back(pad + "}\n");
    return out;
  }

  std::vector<std::string> File(size_t functions) {
    std::vector<std::string> out;
    for (size_t i = 0; i < functions; ++i) {
      if (!out.empty()) out.push_back(t_.Pick(6) == 0 ? "\n\n" : "\n");
      const std::vector<std::string> f = Function(t_.Pick(4) == 0 ? 1 : 0);
      out.insert(out.end(), f.begin(), f.end());
    }
    return out;
  }

  std::vector<std::string> Edit(std::vector<std::string> lines, size_t edits) {
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = t_.Pick(lines.size() + 1);
      const size_t end = std::min(lines.size(), at + 1 + t_.Pick(t_.Pick(3) == 0 ? 20 : 4));
      switch (t_.Pick(7)) {
        case 0: {  // a function added
          std::vector<std::string> f = Function(0);
          f.push_back("\n");
          lines.insert(lines.begin() + static_cast<long>(at), f.begin(), f.end());
          break;
        }
        case 1:
          lines.erase(lines.begin() + static_cast<long>(at), lines.begin() + static_cast<long>(end));
          break;
        case 2: {  // a block moved or copied
          const std::vector<std::string> block(lines.begin() + static_cast<long>(at),
                                               lines.begin() + static_cast<long>(end));
          if (t_.Pick(2) == 0)
            lines.erase(lines.begin() + static_cast<long>(at), lines.begin() + static_cast<long>(end));
          const size_t to = t_.Pick(lines.size() + 1);
          lines.insert(lines.begin() + static_cast<long>(to), block.begin(), block.end());
          break;
        }
        case 3:  // re-indented
          for (size_t i = at; i < end; ++i)
            if (lines[i] != "\n") lines[i] = (t_.Pick(2) == 0 ? "\t" : "    ") + lines[i];
          break;
        case 4:  // blank lines
          lines.insert(lines.begin() + static_cast<long>(at), 1 + t_.Pick(2),
                       t_.Pick(5) == 0 ? "  \n" : "\n");
          break;
        case 5: {  // statements added
          std::vector<std::string> body;
          Body(1 + t_.Pick(3), &body);
          lines.insert(lines.begin() + static_cast<long>(at), body.begin(), body.end());
          break;
        }
        case 6:
          for (size_t i = at; i < end; ++i)
            if (t_.Pick(2) == 0) lines[i] = Pad(1 + t_.Pick(2)) + Statement() + "\n";
          break;
      }
    }
    return lines;
  }

  Texts& texts() { return t_; }

 private:
  std::string Pad(int depth) {
    std::string pad;
    for (int i = 0; i < depth; ++i) pad += tabs_ ? "\t" : "  ";
    if (t_.Pick(50) == 0) tabs_ = !tabs_;
    return pad;
  }

  std::string Statement() {
    static const char* const kStatements[] = {"x++;", "return 0;", "y = x;", "/* note */",
                                              "call();", "break;"};
    return kStatements[t_.Pick(6)];
  }

  void Body(int depth, std::vector<std::string>* out) {
    for (size_t i = 0, n = 1 + t_.Pick(6); i < n; ++i) {
      const size_t k = t_.Pick(8);
      if (k == 0 && depth < 4) {
        out->push_back(Pad(depth) + "if (x) {\n");
        Body(depth + 1, out);
        out->push_back(Pad(depth) + "}\n");
      } else if (k == 1) {
        out->push_back("\n");
      } else {
        out->push_back(Pad(depth) + Statement() + "\n");
      }
    }
  }

  Texts t_;
  bool tabs_ = true;
};

// With the indent heuristic (patch and rawdiff: git's defaults) the hunks equal libgit2's
// GIT_DIFF_INDENT_HEURISTIC ones, on code-like texts and on the generated pairs; and on many of
// them they differ from the hunks without it (the heuristic does move groups).
TEST(LineDiff, IndentHeuristicEqualsLibgit2) {
  EnsureLibgit2();
  std::vector<std::pair<std::string, std::string>> pairs = Pairs(20261205, 600);
  Code code(11);
  for (int i = 0; i < 1500; ++i) {
    const std::vector<std::string> a = code.File(1 + code.texts().Pick(i % 10 == 0 ? 60 : 8));
    pairs.push_back({code.texts().Join(a),
                     code.texts().Join(code.Edit(a, 1 + code.texts().Pick(i % 5 == 0 ? 12 : 3)))});
  }
  size_t compared = 0, moved = 0;
  for (const auto& [a, b] : pairs) {
    const std::vector<LineHunk> ours = OwnHunks(a, b, false, false, true);
    ASSERT_EQ(Show(ours), Show(Libgit2Hunks(a, b, false, true)))
        << "pair " << compared << "\n--- a\n" << a << "\n--- b\n" << b;
    ++compared;
    if (Show(ours) != Show(OwnHunks(a, b, false))) ++moved;
  }
  std::printf("%zu pairs equal libgit2's, %zu where the indent heuristic moves a group\n",
              compared, moved);
  EXPECT_GT(moved, 50u) << "pairs where the heuristic gives other hunks";
}

// Blame's diffs (the common tail cut first) against git's own diff without context and without
// the indent heuristic, on generated pairs and on pairs that share long tails.
TEST(LineDiff, BlameDiffEqualsGit) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> pairs = Pairs(99, 250);
  Texts t(5);
  for (int i = 0; i < 60; ++i) {
    const std::vector<std::string> body = t.Lines(200 + t.Pick(800), 30);
    const std::vector<std::string> tail = t.Lines(100 + t.Pick(400), 10);
    std::vector<std::string> a = body, b = t.Edit(body, 1 + t.Pick(10), 30);
    a.insert(a.end(), tail.begin(), tail.end());
    b.insert(b.end(), tail.begin(), tail.end());
    if (t.Pick(2) == 0) b = t.Edit(b, 1, 30);  // sometimes the tail differs after all
    pairs.push_back({t.Join(a), t.Join(b)});
  }
  // A line put in (or taken from) a run of equal lines that goes on into the common tail: git
  // slides the change down the run only as far as the cut.
  for (int i = 0; i < 20; ++i) {
    std::string head, run;
    for (const std::string& l : t.Lines(t.Pick(40), 10)) head += l;
    for (size_t k = 0, n = 100 + t.Pick(1500); k < n; ++k) run += i % 2 ? "x\n" : "ab\n";
    const std::string line = i % 2 ? "x\n" : "ab\n";
    if (i % 4 < 2)
      pairs.push_back({head + run, head + line + run});
    else
      pairs.push_back({head + line + run, head + run});
  }
  std::ostringstream script;
  script << "cd " << ShellQuote(dir.path()) << " && for i in $(seq 0 " << pairs.size() - 1
         << "); do echo \"== $i\"; git diff --no-index -U0 --no-indent-heuristic --text a$i b$i "
            "| grep '^@@' || true; done";
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::ofstream(dir.File("a" + std::to_string(i)), std::ios::binary) << pairs[i].first;
    std::ofstream(dir.File("b" + std::to_string(i)), std::ios::binary) << pairs[i].second;
  }
  const std::string out = Shell("env HOME=" + ShellQuote(dir.path()) +
                                " XDG_CONFIG_HOME=" + ShellQuote(dir.path()) +
                                " GIT_CONFIG_NOSYSTEM=1 sh -c " + ShellQuote(script.str()));
  // git's hunks per pair, from the "@@ -s[,n] +s[,n] @@" headers.
  std::vector<std::vector<LineHunk>> git(pairs.size());
  std::istringstream in(out);
  size_t current = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0) {
      current = std::stoul(line.substr(3));
      continue;
    }
    size_t s1 = 0, n1 = 1, s2 = 0, n2 = 1;
    const char* p = line.c_str() + 4;  // after "@@ -"
    char* end = nullptr;
    s1 = std::strtoul(p, &end, 10);
    if (*end == ',') n1 = std::strtoul(end + 1, &end, 10);
    s2 = std::strtoul(end + 2, &end, 10);  // after " +"
    if (*end == ',') n2 = std::strtoul(end + 1, &end, 10);
    git[current].push_back(LineHunk{n1 ? s1 - 1 : s1, n1, n2 ? s2 - 1 : s2, n2});
  }
  size_t trimmed = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [a, b] = pairs[i];
    ASSERT_EQ(Show(OwnHunks(a, b, true)), Show(git[i])) << "pair " << i;
    if (Show(OwnHunks(a, b, true)) != Show(OwnHunks(a, b, false))) ++trimmed;
  }
  std::printf("%zu pairs equal git's, %zu where cutting the tail changes the hunks\n",
              pairs.size(), trimmed);
  EXPECT_GE(trimmed, 10u);
}

}  // namespace
}  // namespace shellac::gitfrag
