// The log's line counts (gitfrag/line_count.h) against libgit2's minimal diff (xdiff with
// XDF_NEED_MINIMAL, as cgit asks for): the same added and removed lines on edge cases, on many
// random file pairs made of few distinct lines (repeats are where diffs differ), and, when one is
// named, on every changed file of a real repository's commits.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gitfrag/git.h"
#include "gitfrag/line_count.h"
#include "gitfrag/render.h"
#include "gitfrag/set_aside.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

LineDelta Libgit2Delta(const std::string& a, const std::string& b) {
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  opts.flags |= GIT_DIFF_MINIMAL;
  git_patch* raw = nullptr;
  EXPECT_EQ(git_patch_from_buffers(&raw, a.data(), a.size(), "a", b.data(), b.size(), "b", &opts),
            0);
  const PatchPtr patch(raw);
  size_t context = 0, added = 0, removed = 0;
  EXPECT_EQ(git_patch_line_stats(&context, &added, &removed, patch.get()), 0);
  return LineDelta{added, removed};
}

LineDelta OwnDelta(const std::string& a, const std::string& b) {
  return MinimalLineDelta(HashLines(a).hashes, HashLines(b).hashes);
}

void ExpectSameCounts(const std::string& a, const std::string& b) {
  const LineDelta want = Libgit2Delta(a, b), got = OwnDelta(a, b);
  EXPECT_EQ(got.added, want.added) << test::Printable(a) << "\n->\n" << test::Printable(b);
  EXPECT_EQ(got.removed, want.removed) << test::Printable(a) << "\n->\n" << test::Printable(b);
}

// xdiff's setting aside, which the counts and blame's line diff share (set_aside.h): "many"
// matches from xdiff's rough square root of the file's lines (at most 1024), and a line with many
// set aside only inside runs of unmatched lines on both sides, with fewer than a quarter of the run
// (the line counted on each side) having many.
TEST(SetAside, TheRuleOfXdiffsCleanup) {
  EXPECT_EQ(ManyMatchesFrom(100), 16);
  EXPECT_EQ(ManyMatchesFrom(0), 1);
  EXPECT_EQ(ManyMatchesFrom(int64_t{1} << 40), 1024);
  EXPECT_EQ(MatchesOf(0, 16), kNoMatch);
  EXPECT_EQ(MatchesOf(15, 16), kSomeMatches);
  EXPECT_EQ(MatchesOf(16, 16), kManyMatches);
  const auto run = [](size_t before, char middle, size_t after) {
    std::vector<char> m(before, kNoMatch);
    m.push_back(middle);
    m.insert(m.end(), after, kNoMatch);
    return m;
  };
  EXPECT_TRUE(KeptForSearch(run(0, kSomeMatches, 0), 0));
  EXPECT_FALSE(KeptForSearch(run(0, kNoMatch, 0), 0));
  // 2 many (the line on each side) and 7 unmatched: 8 < 9, set aside; with 6: 8 < 8 fails, kept.
  EXPECT_FALSE(KeptForSearch(run(3, kManyMatches, 4), 3));
  EXPECT_TRUE(KeptForSearch(run(3, kManyMatches, 3), 3));
  // No unmatched line on one side: kept, however many on the other.
  EXPECT_TRUE(KeptForSearch(run(0, kManyMatches, 50), 0));
  EXPECT_TRUE(KeptForSearch(run(50, kManyMatches, 0), 50));
  std::vector<char> m = run(10, kManyMatches, 10);
  m[9] = kSomeMatches;  // a line with some matches ends the run before it
  EXPECT_TRUE(KeptForSearch(m, 10));
  // Other lines with many count against setting aside: 1 + 2 + 1 many, 14 unmatched: 16 < 18.
  m = run(8, kManyMatches, 8);
  m[3] = m[12] = kManyMatches;
  EXPECT_FALSE(KeptForSearch(m, 8));
  m[2] = kManyMatches;  // 5 many, 13 unmatched: 20 < 18 fails
  EXPECT_TRUE(KeptForSearch(m, 8));
}

TEST(LineCount, EdgeCases) {
  EnsureLibgit2();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"", "a\nb\n"},
      {"a\nb\n", ""},
      {"a\nb\nc\n", "a\nb\nc\n"},
      {"a\nb\nc", "a\nb\nc\n"},  // the last line gains its newline
      {"a\nb\nc\n", "a\nb\nc"},
      {"x", "y"},
      {"a\r\nb\r\n", "a\nb\r\n"},  // CR is part of the line
      {"\n\n\n", "\n\n"},
      {"a\n\nb\n\nc\n", "\n\na\nb\nc\n\n"},
      {"a\nb\nc\nd\n", "d\nc\nb\na\n"},
      {"a\na\na\nb\n", "b\na\na\na\n"},
      {"one\ntwo\nthree\n", "four\nfive\nsix\nseven\n"},
      {"p\nq\nr\ns\nt\n", "p\nX\nr\nY\nt\nZ\n"},
  };
  for (const auto& [a, b] : cases) ExpectSameCounts(a, b);
}

// The common head and tail are found by comparing the hashes' bytes: a hash that shares its
// first or last bytes with the other side's is still a different line.
TEST(LineCount, HeadAndTailTakeWholeHashesOnly) {
  const uint64_t x = 0x1111111111111111ull, y = 0x2222222222222222ull;
  // the same low byte (first in memory on x86), then the same high byte
  const uint64_t low_a = 0xAB000000000000CDull, low_b = 0xAC000000000000CDull;
  const uint64_t high_a = 0xEF000000000000A1ull, high_b = 0xEF000000000000A2ull;
  for (const auto& [p, q] : {std::pair{low_a, low_b}, std::pair{high_a, high_b}}) {
    const LineDelta middle = MinimalLineDelta({x, p, y}, {x, q, y});
    EXPECT_EQ(middle.added, 1u);
    EXPECT_EQ(middle.removed, 1u);
    const LineDelta first = MinimalLineDelta({p, x, y}, {q, x, y});
    EXPECT_EQ(first.added, 1u);
    EXPECT_EQ(first.removed, 1u);
    const LineDelta last = MinimalLineDelta({x, y, p}, {x, y, q});
    EXPECT_EQ(last.added, 1u);
    EXPECT_EQ(last.removed, 1u);
  }
  // One side all head: the other's extra lines are added, however their bytes begin.
  const LineDelta grown = MinimalLineDelta({x, y}, {x, y, low_a, low_b});
  EXPECT_EQ(grown.added, 2u);
  EXPECT_EQ(grown.removed, 0u);
  const LineDelta empty = MinimalLineDelta({}, {x});
  EXPECT_EQ(empty.added, 1u);
  EXPECT_EQ(empty.removed, 0u);
  // The common head and tail overlap when a line repeats: counted once.
  const LineDelta repeat = MinimalLineDelta({x, x}, {x, x, x});
  EXPECT_EQ(repeat.added, 1u);
  EXPECT_EQ(repeat.removed, 0u);
}

TEST(LineCount, BinaryIsANulInTheFirst8000Bytes) {
  EXPECT_TRUE(HashLines(std::string("a\0b\n", 4)).binary);
  EXPECT_FALSE(HashLines(std::string(8000, 'x') + std::string(1, '\0')).binary);
  EXPECT_TRUE(HashLines(std::string(7999, 'x') + std::string(1, '\0')).binary);
  EXPECT_FALSE(HashLines("text\n").binary);
}

// A line's hash does not depend on where it starts in the blob (HashLines reads 8 bytes a step
// from each line's start): every line of random text, at every offset, hashes as the line alone;
// lines that differ (by a byte anywhere, by their newline, by a byte past a word's end) differ.
TEST(LineCount, ALineHashesTheSameWhereverItStarts) {
  std::mt19937 rng(99);
  for (int round = 0; round < 500; ++round) {
    std::vector<std::string> lines(rng() % 30);
    std::string text = std::string(rng() % 9, '.') + "\n";  // shifts every later line
    lines.insert(lines.begin(), text);
    for (size_t i = 1; i < lines.size(); ++i) {
      const size_t len = rng() % 4 == 0 ? rng() % 100 : rng() % 20;
      for (size_t j = 0; j < len; ++j) lines[i] += static_cast<char>('a' + rng() % 3);
      lines[i] += '\n';
      text += lines[i];
    }
    if (rng() % 2 == 0) {  // a last line without a newline, sometimes under 8 bytes
      lines.emplace_back(rng() % 20 + 1, 'e');
      text += lines.back();
    }
    const BlobLines all = HashLines(text);
    ASSERT_EQ(all.hashes.size(), lines.size()) << test::Printable(text);
    for (size_t i = 0; i < lines.size(); ++i)
      ASSERT_EQ(all.hashes[i], HashLines(lines[i]).hashes.at(0)) << test::Printable(lines[i]);
  }
  std::vector<std::string> distinct;
  for (size_t len = 0; len <= 24; ++len) {
    const std::string base(len, 'k');
    distinct.push_back(base + "\n");
    if (len > 0) distinct.push_back(base);
    for (size_t at = 0; at < len; ++at) {
      std::string changed = base + "\n";
      changed[at] = 'K';
      distinct.push_back(changed);
    }
  }
  std::vector<uint64_t> hashes;
  for (const std::string& line : distinct) {
    const BlobLines one = HashLines(line);
    ASSERT_EQ(one.hashes.size(), 1u) << test::Printable(line);
    hashes.push_back(one.hashes[0]);
  }
  std::sort(hashes.begin(), hashes.end());
  EXPECT_EQ(std::adjacent_find(hashes.begin(), hashes.end()), hashes.end());
}

// HashLinesNear takes the lines inside the bytes two versions share at the start and the end from
// the other version's hashes and line ends: the same hashes and ends as HashLines whatever the
// other version is (edits inside a line, at a line's edge, of newlines, at either end; a last
// line with and without its newline; nothing shared; the same bytes; empty, binary and shorter
// files).
void ExpectNearEqualsWhole(const std::string& data, const std::string& near) {
  std::vector<uint32_t> near_ends, want_ends, got_ends;
  const BlobLines near_lines = HashLines(near, &near_ends);
  const BlobLines want = HashLines(data, &want_ends);
  const BlobLines got = HashLinesNear(data, near, near_lines, near_ends, &got_ends);
  ASSERT_EQ(got.binary, want.binary);
  ASSERT_EQ(got.hashes, want.hashes) << test::Printable(near) << "\n->\n" << test::Printable(data);
  ASSERT_EQ(got_ends, want_ends) << test::Printable(near) << "\n->\n" << test::Printable(data);
}

TEST(LineCount, HashLinesNearEqualsHashLines) {
  std::mt19937 rng(7);
  auto random_text = [&](size_t lines, size_t longest) {
    std::string text;
    for (size_t i = 0; i < lines; ++i) {
      const size_t len = rng() % 4 == 0 ? rng() % longest : rng() % 12;
      for (size_t j = 0; j < len; ++j) text += static_cast<char>('a' + rng() % 3);
      text += '\n';
    }
    if (rng() % 3 == 0) text += std::string(rng() % 10 + 1, 'z');
    return text;
  };
  auto edit = [&](std::string text) {
    const int edits = static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
      switch (rng() % 5) {
        case 0:
          text.insert(at, std::string(rng() % 3 + 1, '\n'));
          break;
        case 1:
          text.insert(at, random_text(rng() % 3, 40));
          break;
        case 2:
          text.erase(at, rng() % 20);
          break;
        case 3:
          if (at < text.size()) text[at] = static_cast<char>('a' + rng() % 4);
          break;
        default:
          text.erase(at);  // cut the end: its last line may lose its newline
          break;
      }
    }
    return text;
  };
  for (int round = 0; round < 20000; ++round) {
    // Long files too: the shared spans are compared 256 bytes at a time.
    const std::string near = random_text(rng() % 8 == 0 ? 400 : rng() % 40, rng() % 2 ? 40 : 600);
    ExpectNearEqualsWhole(rng() % 10 == 0 ? random_text(rng() % 40, 40) : edit(near), near);
    ExpectNearEqualsWhole(near, near);
  }
  ExpectNearEqualsWhole(std::string("a\0b\n", 4), "a\nb\n");
  ExpectNearEqualsWhole("a\nb\n", std::string("a\0b\n", 4));
  ExpectNearEqualsWhole("", "a\n");
  ExpectNearEqualsWhole("a\n", "");
  ExpectNearEqualsWhole("a", "a\n");
  ExpectNearEqualsWhole("a\n", "a");
  ExpectNearEqualsWhole("x\na\n", "x\nb\na\n");
  std::vector<uint32_t> ends;
  EXPECT_TRUE(HashLinesNear(std::string("a\0b\n", 4), "a\nb\n", HashLines("a\nb\n"),
                            std::vector<uint32_t>{2, 4}, &ends)
                  .binary);
}

// Files of few distinct lines (so most lines repeat, some often enough for xdiff to set them aside
// amid unmatched ones), the second made from the first by random insertions, deletions,
// replacements and moves.
TEST(LineCount, RandomPairsEqualLibgit2Minimal) {
  EnsureLibgit2();
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    const int alphabet = 2 + static_cast<int>(rng() % 12);
    int unique = 0;
    const auto line = [&] {  // mostly repeated lines, some blank, some found in one file only
      if (rng() % 4 == 0) return "unique " + std::to_string(round) + "." + std::to_string(++unique) + "\n";
      const int v = static_cast<int>(rng() % static_cast<unsigned>(alphabet));
      return v == 0 ? std::string("\n") : "line " + std::to_string(v) + "\n";
    };
    std::vector<std::string> a(rng() % 120);
    for (auto& l : a) l = line();
    std::vector<std::string> b = a;
    const int edits = static_cast<int>(rng() % 40);
    for (int e = 0; e < edits; ++e) {
      const size_t at = b.empty() ? 0 : rng() % (b.size() + 1);
      switch (rng() % 5) {
        case 4: {  // a paragraph rewritten: new lines with a frequent one (a blank) among them
          const size_t len = rng() % 20;
          for (size_t j = 0; j < len; ++j)
            b.insert(b.begin() + static_cast<ptrdiff_t>(std::min(at + j, b.size())),
                     j % 5 == 4 ? std::string("\n") : "unique " + std::to_string(round) + "." + std::to_string(++unique) + "\n");
          break;
        }
        case 0: b.insert(b.begin() + static_cast<ptrdiff_t>(at), line()); break;
        case 1: if (at < b.size()) b.erase(b.begin() + static_cast<ptrdiff_t>(at)); break;
        case 2: if (at < b.size()) b[at] = line(); break;
        default:
          if (at < b.size()) {
            std::string moved = b[at];
            b.erase(b.begin() + static_cast<ptrdiff_t>(at));
            b.insert(b.begin() + static_cast<ptrdiff_t>(rng() % (b.size() + 1)), moved);
          }
      }
    }
    std::string sa, sb;
    for (const auto& l : a) sa += l;
    for (const auto& l : b) sb += l;
    if (rng() % 5 == 0 && !sb.empty()) sb.pop_back();  // sometimes no newline at the end
    ExpectSameCounts(sa, sb);
    if (HasFailure()) return;
  }
}

// The two LCS searches agree: random id sequences of few distinct ids (long common runs and
// many repeats) and of many (few matches), of lengths across word boundaries of the bit-vectors
// (63, 64, 65, 128...); and LcsLength, whichever it picks, gives the same.
TEST(LineCount, BitParallelLcsEqualsMyers) {
  std::mt19937 rng(777);
  const std::vector<size_t> sizes = {0, 1, 2, 63, 64, 65, 127, 128, 129, 300, 700};
  for (int round = 0; round < 400; ++round) {
    const size_t ids = 1 + rng() % (round % 2 == 0 ? 6 : 500);
    std::vector<uint32_t> a(sizes[rng() % sizes.size()]);
    for (auto& x : a) x = static_cast<uint32_t>(rng() % ids);
    std::vector<uint32_t> b = a;  // a edited: the common runs Myers follows
    const size_t edits = rng() % (1 + a.size());
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = b.empty() ? 0 : rng() % b.size();
      if (rng() % 2 == 0 && !b.empty())
        b[at] = static_cast<uint32_t>(rng() % ids);
      else
        b.insert(b.begin() + static_cast<ptrdiff_t>(at), static_cast<uint32_t>(rng() % ids));
    }
    const size_t want = LcsMyers(a, b);
    EXPECT_EQ(LcsBits(a, b, ids), want) << "round " << round;
    EXPECT_EQ(LcsBits(b, a, ids), want) << "round " << round;
    EXPECT_EQ(LcsLength(a, b, ids), want) << "round " << round;
    if (HasFailure()) return;
  }
}

// Myers' search from both ends meets in the middle at the right distance whatever the parity of
// |a| - |b|, the sizes and where the files' edges stop the paths: every pair of sequences of up
// to 6 lines over 3 distinct lines (and up to 9 over 2), against the bit-vector recurrence,
// which does not search.
TEST(LineCount, MyersEqualsBitsOnEverySmallPair) {
  for (const auto& [ids, longest] : {std::pair<uint32_t, size_t>{3, 6}, {2, 9}}) {
    std::vector<std::vector<uint32_t>> all = {{}};
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].size() == longest) continue;
      for (uint32_t id = 0; id < ids; ++id) {
        all.push_back(all[i]);
        all.back().push_back(id);
      }
    }
    for (const auto& a : all) {
      for (const auto& b : all) {
        ASSERT_EQ(LcsMyers(a, b), LcsBits(a, b, ids))
            << ::testing::PrintToString(a) << " " << ::testing::PrintToString(b);
      }
    }
  }
}

// The same on long files of lines that seldom repeat (a rewritten translation), where the
// bit-vectors step only the words a line's equals are in: runs of a hundred and more lines
// deleted, inserted and moved, so that carries cross words of unmatched (all set) lines, and a few
// lines repeated everywhere, whose rows have bits in every word.
TEST(LineCount, SparseBitsOnLongFilesEqualMyers) {
  std::mt19937 rng(4242);
  for (int round = 0; round < 60; ++round) {
    const size_t n = 500 + rng() % 4000;
    uint32_t next_id = 0;
    const auto line = [&] {  // mostly a new line; now and then one of 4 common ones
      return rng() % 8 == 0 ? static_cast<uint32_t>(rng() % 4) : 4 + next_id++;
    };
    std::vector<uint32_t> a(n);
    for (auto& x : a) x = line();
    std::vector<uint32_t> b;
    for (size_t i = 0; i < a.size();) {
      const size_t run = 1 + rng() % 300;
      switch (rng() % 5) {
        case 0:  // deleted
          i += run;
          break;
        case 1:  // new lines
          for (size_t k = 0; k < run; ++k) b.push_back(line());
          break;
        case 2:  // every other line rewritten
          for (size_t k = 0; k < run && i < a.size(); ++k, ++i) b.push_back(k % 2 ? line() : a[i]);
          break;
        default:  // kept
          for (size_t k = 0; k < run && i < a.size(); ++k, ++i) b.push_back(a[i]);
      }
    }
    if (round % 3 == 0 && b.size() > 400) {  // a block moved from the end to the start
      std::rotate(b.begin(), b.end() - 200, b.end());
    }
    const size_t ids = 4 + next_id;
    const size_t want = LcsMyers(a, b);
    EXPECT_EQ(LcsBits(a, b, ids), want) << "round " << round;
    EXPECT_EQ(LcsBits(b, a, ids), want) << "round " << round;
    EXPECT_EQ(LcsLength(a, b, ids), want) << "round " << round;
    if (HasFailure()) return;
  }
}

// On the real repository SHELLAC_TREE_DIFF_REPO names (test::TreeDiffRepositorySample): every
// changed file of every sampled non-merge commit against its first parent.
TEST(LineCountRealRepository, EveryChangedFileEqualsLibgit2Minimal) {
  const auto sample = test::TreeDiffRepositorySample("--no-merges");
  if (!sample) GTEST_SKIP() << "SHELLAC_TREE_DIFF_REPO not set";
  EnsureLibgit2();
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, sample->path.c_str()), 0);
  const RepositoryPtr repo(raw);
  size_t files = 0;
  for (const std::string& id : sample->commits) {
    git_oid oid;
    ASSERT_EQ(git_oid_fromstr(&oid, id.c_str()), 0);
    git_commit* c = nullptr;
    ASSERT_EQ(git_commit_lookup(&c, repo.get(), &oid), 0);
    const CommitPtr commit(c);
    CommitFiles changed;
    changed.blob_lines = true;  // as the log asks: rename candidates' lines come from their reads
    std::string reason;
    ASSERT_TRUE(CommitFileDiffs(repo.get(), commit.get(), nullptr, DiffOptions(), "", &changed,
                                &reason));
    for (const FileDiff& f : changed.files) {
      if (!f.patch || (f.delta.flags & GIT_DIFF_FLAG_BINARY) != 0 ||
          f.delta.old_file.mode == GIT_FILEMODE_COMMIT || f.delta.new_file.mode == GIT_FILEMODE_COMMIT)
        continue;
      size_t context = 0, added = 0, removed = 0;
      ASSERT_EQ(git_patch_line_stats(&context, &added, &removed, f.patch.get()), 0);
      static const auto kNone = std::make_shared<const BlobLines>();
      // Each side hashed from the other when that one was read lately, as the log asks.
      const auto a = git_oid_is_zero(&f.delta.old_file.id)
                         ? kNone
                         : BlobLinesOf(repo.get(), f.delta.old_file.id, &f.delta.new_file.id);
      const auto b = git_oid_is_zero(&f.delta.new_file.id)
                         ? kNone
                         : BlobLinesOf(repo.get(), f.delta.new_file.id, &f.delta.old_file.id);
      ASSERT_TRUE(a && b);
      if (a->binary || b->binary) continue;  // no lines counted (FileLineDelta), whatever libgit2 says
      const LineDelta got = MinimalLineDelta(a->hashes, b->hashes);
      EXPECT_EQ(got.added, added) << id << " " << f.delta.new_file.path;
      EXPECT_EQ(got.removed, removed) << id << " " << f.delta.new_file.path;
      ++files;
    }
  }
  std::cout << "[ compared ] " << files << " changed files\n";
  EXPECT_GT(files, 0u);
}

}  // namespace
}  // namespace shellac::gitfrag
