// gitfrag's rename detection (gitfrag/renames.h) against git 2.39's own: every commit of a fixture
// made for the edge cases of diffcore-rename (exact renames among several identical blobs, the
// basename preference, edits on both sides of the 50 % threshold, the basename pass, empty files,
// symlinks, a kind change, a small rename limit, many close candidates) listed as `git diff-tree
// -M --raw` lists it: statuses, similarity scores, paths, modes, ids and order.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gitfrag/git.h"
#include "gitfrag/line_count.h"
#include "gitfrag/render.h"
#include "gitfrag/renames.h"
#include "gitfrag/tree_diff.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

using test::Shell;
using test::ShellQuote;
using test::TempDir;

// A commit per case (lines N PREFIX: N numbered lines of 40 bytes, distinct per PREFIX, so that
// keeping K of 100 lines scores K %); the last ones are many candidates made by awk from fixed
// seeds.
constexpr const char* kScript = R"SH(
set -e
lines() { awk -v n="$1" -v p="$2" 'BEGIN { for (i = 1; i <= n; i++) printf "%-6s line %03d of a fixture file, pad.\n", p, i }'; }
# mix SRC KEEP: the first KEEP lines of SRC, the rest replaced by lines of the same length (40).
mix() { awk -v k="$2" '{ if (NR <= k) print; else printf "other %03d of the replaced part, padded.\n", NR }' "$1"; }
git init -q -b master work
cd work
git config core.autocrlf false
git config core.symlinks true
mkdir -p x y z keep
lines 40 same > x/same.txt; cp x/same.txt y/same.txt; cp x/same.txt z/copy.txt
lines 40 solo > solo.txt
lines 100 near > keep/near.txt
lines 100 under > keep/under.txt
lines 100 over > keep/over.txt
lines 100 base > x/util.c
lines 100 rival > x/rival.c
lines 100 weak > x/weak.c
lines 30 link > target.txt; ln -s target.txt link
: > empty1
printf 'a\r\nb\r\nc\r\n' > crlf.txt
git add -A && git commit -q -m root
git mv solo.txt moved-solo.txt && git commit -q -m 'exact rename'
git rm -q x/same.txt y/same.txt z/copy.txt
mkdir -p w v u
lines 40 same > w/same.txt; cp w/same.txt v/other.txt; cp w/same.txt u/same.txt
git add -A && git commit -q -m 'three identical sources, three destinations'
mix keep/near.txt 90 > near2.txt && git rm -q keep/near.txt && git add -A && git commit -q -m 'rename with a small edit'
mix keep/under.txt 48 > under2.txt && git rm -q keep/under.txt && git add -A && git commit -q -m 'edit just under 50 %'
mix keep/over.txt 52 > over2.txt && git rm -q keep/over.txt && git add -A && git commit -q -m 'edit just over 50 %'
mkdir -p lib
mix x/util.c 80 > lib/util.c; mix x/util.c 95 > lib/best.c; git rm -q x/util.c
git add -A && git commit -q -m 'basename pass: a unique basename at 80 % before a better match'
mix x/rival.c 60 > lib/rival.c; mix x/weak.c 95 > lib/weak2.c; git rm -q x/rival.c x/weak.c
git add -A && git commit -q -m 'unique basename under 75 %: the matrix decides'
git mv link link2 && git mv target.txt t2.txt && git commit -q -m 'symlink and file renamed'
rm link2 && cp t2.txt link2 && git rm -q t2.txt && git add -A && git commit -q -m 'symlink becomes a copy of a deleted file'
git mv empty1 empty2 && git commit -q -m 'empty file renamed'
printf 'a\nb\nc\n' > crlf2.txt && git rm -q crlf.txt && git add -A && git commit -q -m 'CRLF to LF'
mkdir -p many
for i in 1 2 3 4 5 6; do lines 30 "m$i" > many/f$i.txt; done
git add -A && git commit -q -m 'many: sources'
for i in 1 2 3 4 5 6; do awk -v s="$i" 'BEGIN { srand(s) } { if (rand() < 0.35) printf "changed %05d line of a fixture file, padded\n", int(rand() * 99999); else print }' many/f$i.txt > many/g$i.txt; done
cp many/f1.txt many/h1.txt
git rm -q many/f1.txt many/f2.txt many/f3.txt many/f4.txt many/f5.txt many/f6.txt
git add -A && git commit -q -m 'many: close candidates'
mkdir -p r
for i in 1 2 3 4 5 6 7 8 9 10; do awk -v s="$i" 'BEGIN { srand(s * 7); for (l = 0; l < 40; l++) printf "common %02d, a line shared by several files\n", int(rand() * 12) }' > r/s$i.txt; done
git add -A && git commit -q -m 'random: sources'
for i in 1 2 3 4 5 6 7 8 9 10; do awk -v s="$i" 'BEGIN { srand(s * 13); for (l = 0; l < 40; l++) printf "common %02d, a line shared by several files\n", int(rand() * 12) }' > r/d$i.txt; done
git rm -q r/s*.txt && git add -A && git commit -q -m 'random: many partial matches'
)SH";

class RenameFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureLibgit2();
    test::MakeFixture(dir_, kScript, test::kDated);
    git_dir_ = dir_.File("work/.git");
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, git_dir_.c_str()), 0);
    repo_.reset(raw);
  }

  std::string Git(const std::string& args) {
    return Shell("env HOME=" + ShellQuote(dir_.path()) + " GIT_CONFIG_NOSYSTEM=1 git -C " +
                 ShellQuote(git_dir_) + " " + args);
  }

  CommitPtr Commit(const std::string& rev) {
    const std::string id = Git("rev-parse " + ShellQuote(rev));
    git_oid oid;
    EXPECT_EQ(git_oid_fromstr(&oid, id.substr(0, 40).c_str()), 0);
    git_commit* c = nullptr;
    EXPECT_EQ(git_commit_lookup(&c, repo_.get(), &oid), 0);
    return CommitPtr(c);
  }

  // The commit's changes against its first parent after DetectRenames with `limit` (and
  // `blob_lines`), as `git diff-tree --raw` writes them.
  std::string Ours(git_commit* commit, int limit, bool blob_lines = false) {
    git_tree *raw_new = nullptr, *raw_old = nullptr;
    EXPECT_EQ(git_commit_tree(&raw_new, commit), 0);
    TreePtr new_tree(raw_new);
    git_commit* parent = nullptr;
    EXPECT_EQ(git_commit_parent(&parent, commit, 0), 0);
    CommitPtr owned(parent);
    EXPECT_EQ(git_commit_tree(&raw_old, parent), 0);
    TreePtr old_tree(raw_old);
    std::vector<TreeChange> changes;
    std::string reason;
    EXPECT_TRUE(DiffTrees(repo_.get(), old_tree.get(), new_tree.get(), &changes, &reason));
    EXPECT_TRUE(DetectRenames(repo_.get(), &changes, limit, blob_lines, &reason)) << reason;
    std::string out;
    for (size_t i = 0; i < changes.size(); ++i) {
      const TreeChange& c = changes[i];
      char head[160];
      std::string status(1, c.status == GIT_DELTA_ADDED        ? 'A'
                            : c.status == GIT_DELTA_DELETED    ? 'D'
                            : c.status == GIT_DELTA_RENAMED    ? 'R'
                            : c.status == GIT_DELTA_TYPECHANGE ? 'T'
                                                               : 'M');
      if (c.status == GIT_DELTA_RENAMED) {
        char score[16];
        std::snprintf(score, sizeof score, "%03d", c.score * 100 / kMaxSimilarity);
        status += score;
      }
      std::snprintf(head, sizeof head, ":%06o %06o %s %s ", c.old_mode, c.new_mode,
                    OidHex(c.old_id).c_str(), OidHex(c.new_id).c_str());
      out += head + status + "\t" + (c.status == GIT_DELTA_RENAMED ? c.old_path + "\t" : "") +
             c.path + "\n";
    }
    return out;
  }

  std::string Theirs(git_commit* commit, int limit) {
    const std::string id = OidHex(*git_commit_id(commit));
    return Git("diff-tree -r -M -l" + std::to_string(limit) + " --raw --no-abbrev " + id +
               "^ " + id + " 2>/dev/null");
  }

  TempDir dir_;
  std::string git_dir_;
  RepositoryPtr repo_;
};

TEST_F(RenameFixture, EveryCommitPairsAsGitDoes) {
  std::istringstream ids(Git("rev-list master^{/^root}..master"));
  size_t commits = 0;
  for (std::string id; std::getline(ids, id);) {
    if (id.empty()) continue;
    const CommitPtr commit = Commit(id);
    ++commits;
    const std::string theirs = Theirs(commit.get(), kDefaultRenameLimit);
    EXPECT_EQ(Ours(commit.get(), kDefaultRenameLimit), theirs) << git_commit_summary(commit.get());
    EXPECT_EQ(Ours(commit.get(), kDefaultRenameLimit, true), theirs)
        << git_commit_summary(commit.get());
  }
  EXPECT_EQ(commits, 15u);
}

// What the cases are there for: the pairs git makes, spelled out, so that a fixture git pairs in
// some other way (a changed script) cannot pass unnoticed.
TEST_F(RenameFixture, TheCasesPairAsDesigned) {
  auto ours = [&](const char* subject) {
    return Ours(Commit(std::string(":/") + subject).get(), kDefaultRenameLimit);
  };
  EXPECT_NE(ours("exact rename").find("R100\tsolo.txt\tmoved-solo.txt"), std::string::npos);
  const std::string three = ours("three identical sources");
  // The same basename first, then path order: u/same.txt takes x/same.txt (the first source),
  // v/other.txt the first source left (y/same.txt), w/same.txt the last one.
  EXPECT_NE(three.find("R100\tx/same.txt\tu/same.txt"), std::string::npos) << three;
  EXPECT_NE(three.find("R100\ty/same.txt\tv/other.txt"), std::string::npos) << three;
  EXPECT_NE(three.find("R100\tz/copy.txt\tw/same.txt"), std::string::npos) << three;
  EXPECT_NE(ours("rename with a small edit").find("R090\tkeep/near.txt\tnear2.txt"),
            std::string::npos);
  EXPECT_EQ(ours("edit just under 50 %").find('R'), std::string::npos);
  EXPECT_NE(ours("edit just over 50 %").find("\tkeep/over.txt\tover2.txt"), std::string::npos);
  const std::string basename = ours("basename pass");
  EXPECT_NE(basename.find("R080\tx/util.c\tlib/util.c"), std::string::npos) << basename;
  EXPECT_NE(basename.find("A\tlib/best.c"), std::string::npos) << basename;
  const std::string rival = ours("unique basename under 75 %");
  EXPECT_NE(rival.find("R060\tx/rival.c\tlib/rival.c"), std::string::npos) << rival;
  // The added link2 has t2.txt's blob, but a path deleted and added at once is no candidate.
  const std::string kind = ours("symlink becomes a copy");
  EXPECT_NE(kind.find("T\tlink2"), std::string::npos) << kind;
  EXPECT_NE(kind.find("D\tt2.txt"), std::string::npos) << kind;
  EXPECT_NE(ours("CRLF to LF").find("R066\tcrlf.txt\tcrlf2.txt"), std::string::npos);
  EXPECT_NE(ours("empty file renamed").find("R100\tempty1\tempty2"), std::string::npos);
}

// Past the limit (sources x destinations > limit^2 after the exact and basename passes) git pairs
// no file by similarity; exact renames still are.
TEST_F(RenameFixture, RenameLimitStopsInexactDetectionAsGits) {
  for (const char* subject : {"many: close candidates", "random: many partial matches",
                              "three identical sources", "basename pass"}) {
    const CommitPtr commit = Commit(std::string(":/") + subject);
    for (int limit : {1, 2, 3, 6, 0}) {
      EXPECT_EQ(Ours(commit.get(), limit), Theirs(commit.get(), limit))
          << subject << " limit=" << limit;
    }
  }
  const CommitPtr many = Commit(":/many: close candidates");
  const std::string limited = Ours(many.get(), 2);
  EXPECT_NE(limited.find("R100\tmany/f1.txt\tmany/h1.txt"), std::string::npos) << limited;
  EXPECT_EQ(limited.find("\tmany/g"), limited.find("A\tmany/g") + 1) << limited;
}

// With blob_lines, the blobs read for the estimates leave their lines in BlobLinesOf's memo (keyed
// by id alone, shared by the process): asked through a repository that lacks them, it answers
// them, as HashLines makes them; without, it does not. The blobs are new to this process (a nonce
// in their text), a deleted and an added file that share 60 of their 100 lines.
TEST_F(RenameFixture, BlobLinesComeFromTheEstimatesRead) {
  TempDir empty_dir;
  git_repository* raw_empty = nullptr;
  ASSERT_EQ(git_repository_init(&raw_empty, empty_dir.File("e.git").c_str(), 1), 0);
  const RepositoryPtr empty(raw_empty);
  for (const bool blob_lines : {false, true}) {
    const std::string nonce =
        std::to_string(std::random_device{}()) + "." + std::to_string(blob_lines ? 1 : 0);
    std::string old_text, new_text;
    for (int i = 0; i < 100; ++i) {
      const std::string line = "line " + std::to_string(i) + " of " + nonce + "\n";
      old_text += line;
      new_text += i < 60 ? line : "new " + line;
    }
    std::vector<TreeChange> changes(2);
    changes[0].status = GIT_DELTA_DELETED;
    changes[0].path = "a/old.txt";
    changes[0].old_mode = 0100644;
    ASSERT_EQ(git_blob_create_from_buffer(&changes[0].old_id, repo_.get(), old_text.data(),
                                          old_text.size()),
              0);
    changes[1].status = GIT_DELTA_ADDED;
    changes[1].path = "b/new.txt";
    changes[1].new_mode = 0100644;
    ASSERT_EQ(git_blob_create_from_buffer(&changes[1].new_id, repo_.get(), new_text.data(),
                                          new_text.size()),
              0);
    const git_oid old_id = changes[0].old_id, new_id = changes[1].new_id;
    std::string reason;
    ASSERT_TRUE(DetectRenames(repo_.get(), &changes, kDefaultRenameLimit, blob_lines, &reason))
        << reason;
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].status, GIT_DELTA_RENAMED);
    const std::pair<git_oid, const std::string*> sides[] = {{old_id, &old_text},
                                                            {new_id, &new_text}};
    for (const auto& [id, text] : sides) {
      const std::shared_ptr<const BlobLines> kept = BlobLinesOf(empty.get(), id);
      if (!blob_lines) {
        EXPECT_EQ(kept, nullptr) << OidHex(id);
        continue;
      }
      ASSERT_NE(kept, nullptr) << OidHex(id);
      EXPECT_EQ(kept->hashes, HashLines(*text).hashes);
      EXPECT_EQ(kept->hashes.size(), 100u);
    }
  }
}

// diffcore-delta's chunking as git writes it, a byte at a time: the reference SpanHashes must
// equal (its chunks found a line at a time).
std::vector<std::pair<uint32_t, uint32_t>> GitSpanHashes(std::string_view bytes) {
  const bool text = !LooksBinary(bytes);
  std::map<uint32_t, uint32_t> spans;
  uint32_t accum1 = 0, accum2 = 0, n = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const uint32_t c = static_cast<unsigned char>(bytes[i]);
    if (text && c == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') continue;
    const uint32_t old1 = accum1;
    accum1 = (accum1 << 7) ^ (accum2 >> 25);
    accum2 = (accum2 << 7) ^ (old1 >> 25);
    accum1 += c;
    if (++n < 64 && c != '\n') continue;
    spans[(accum1 + accum2 * 0x61) % 107927] += n;
    n = 0;
    accum1 = accum2 = 0;
  }
  return {spans.begin(), spans.end()};
}

// Lines around the chunk size (63 to 66 bytes, with and without a CR before the newline), CRs
// alone, CRs at the end, no newline at the end, and bytes with a NUL in the first 8000 (binary:
// a CR before a newline is fed too).
TEST(SpanHashes, EqualGitsByteLoop) {
  std::vector<std::string> cases = {"", "\n", "\r", "\r\n", "\r\r\n", "x\r", "\n\r\n\r",
                                    std::string(64, 'x'), std::string(128, 'x'),
                                    std::string(127, 'x')};
  for (size_t len = 60; len <= 132; ++len)
    for (const char* eol : {"\n", "\r\n", "\r\r\n", ""}) {
      cases.push_back(std::string(len, 'y') + eol + "z\n");
      cases.push_back(std::string(1, '\0') + std::string(len, 'y') + eol + "z\n");
    }
  std::mt19937 rng(2024);
  const char alphabet[] = {'a', 'b', 'c', '\r', '\n', '\t', '\xff'};
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    const size_t lines = rng() % 12;
    for (size_t l = 0; l < lines; ++l) {
      const size_t len = rng() % 3 == 0 ? rng() % 200 : rng() % 8;
      for (size_t i = 0; i < len; ++i) s += alphabet[rng() % sizeof alphabet];
      s += rng() % 3 == 0 ? "\r\n" : "\n";
    }
    if (rng() % 2 == 0) s += std::string(rng() % 140, 'q');
    if (rng() % 10 == 0) s.insert(rng() % (s.size() + 1), 1, '\0');
    cases.push_back(std::move(s));
  }
  for (const std::string& s : cases) {
    EXPECT_EQ(SpanHashes(s), GitSpanHashes(s)) << test::Printable(s);
    if (HasFailure()) return;
  }
}

// The pages take the pairs: the commit page's list and the log's count.
TEST_F(RenameFixture, CommitFilesCarryThePairs) {
  const CommitPtr commit = Commit(":/rename with a small edit");
  CommitFiles files;
  std::string reason;
  ASSERT_TRUE(CommitFileDiffs(repo_.get(), commit.get(), nullptr, DiffOptions{}, "", &files,
                              &reason))
      << reason;
  ASSERT_EQ(files.files.size(), 1u);
  EXPECT_EQ(files.files[0].delta.status, GIT_DELTA_RENAMED);
  EXPECT_STREQ(files.files[0].delta.old_file.path, "keep/near.txt");
  EXPECT_STREQ(files.files[0].delta.new_file.path, "near2.txt");
  ASSERT_TRUE(files.files[0].patch);
  size_t context = 0, added = 0, removed = 0;
  ASSERT_EQ(git_patch_line_stats(&context, &added, &removed, files.files[0].patch.get()), 0);
  EXPECT_EQ(added, 10u);
  EXPECT_EQ(removed, 10u);
  // A path limit applies before detection, as git's pathspec: only the deletion is left.
  CommitFiles limited;
  ASSERT_TRUE(CommitFileDiffs(repo_.get(), commit.get(), nullptr, DiffOptions{}, "keep",
                              &limited, &reason))
      << reason;
  ASSERT_EQ(limited.files.size(), 1u);
  EXPECT_EQ(limited.files[0].delta.status, GIT_DELTA_DELETED);
}

}  // namespace
}  // namespace shellac::gitfrag
