// Tests for gitfrag/abbrev.h's UniqueAbbrev: every object's abbreviation, and those of ids that
// are not objects but share 5 to 39 digits with one, at minimum lengths 4..12, equal libgit2's
// (UniqueAbbrevThroughOdb, one git_odb_exists_prefix a length) in a repository whose ids share
// long prefixes across two packs and its loose objects, in a fork that borrows it through
// alternates, in a repository of loose objects only, and behind a multi-pack-index (libgit2's
// answer then); and a loose object written after an answer changes the next one.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "gitfrag/abbrev.h"
#include "gitfrag/git.h"
#include "gitfrag/pack_reader.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

git_oid BlobId(const std::string& content) {
  git_oid id;
  EXPECT_EQ(git_odb_hash(&id, content.data(), content.size(), GIT_OBJECT_BLOB), 0);
  return id;
}

// Blobs "PREFIX N\n", N < n, by id.
std::vector<std::string> Blobs(const std::string& prefix, int n) {
  std::vector<std::pair<std::string, std::string>> by_id;
  for (int i = 0; i < n; ++i) {
    const std::string content = prefix + " " + std::to_string(i) + "\n";
    char hex[GIT_OID_HEXSZ + 1];
    const git_oid id = BlobId(content);
    git_oid_tostr(hex, sizeof hex, &id);
    by_id.emplace_back(hex, content);
  }
  std::sort(by_id.begin(), by_id.end());
  std::vector<std::string> out;
  for (auto& [hex, content] : by_id) out.push_back(std::move(content));
  return out;
}

// Writes `blobs` into a pack of `repo` (fast-import packs 100 objects or more).
void Pack(const std::string& repo, const std::vector<std::string>& blobs, const std::string& tmp) {
  std::ofstream stream(tmp, std::ios::binary);
  for (const std::string& b : blobs) stream << "blob\ndata " << b.size() << "\n" << b << "\n";
  stream.close();
  test::Shell("git -C " + test::ShellQuote(repo) + " fast-import --quiet < " +
              test::ShellQuote(tmp));
}

// A repository and its object database.
struct Opened {
  RepositoryPtr repo;
  OdbPtr odb;
};
Opened Open(const std::string& path) {
  git_repository* repo = nullptr;
  git_odb* odb = nullptr;
  EXPECT_EQ(git_repository_open(&repo, path.c_str()), 0);
  if (repo != nullptr) {
    EXPECT_EQ(git_repository_odb(&odb, repo), 0);
  }
  return Opened{RepositoryPtr(repo), OdbPtr(odb)};
}

// Writes `blobs` as loose objects of `repo` (libgit2 writes loose).
void Loose(const std::string& repo, const std::vector<std::string>& blobs) {
  const Opened o = Open(repo);
  ASSERT_NE(o.odb, nullptr);
  for (const std::string& b : blobs) {
    git_oid id;
    ASSERT_EQ(git_odb_write(&id, o.odb.get(), b.data(), b.size(), GIT_OBJECT_BLOB), 0);
  }
}

class AbbrevTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    EnsureLibgit2();
    dir_ = new test::TempDir();
    const std::string base = dir_->File("base.git"), fork = dir_->File("fork.git"),
                      loose = dir_->File("loose.git");
    test::Shell("git init -q --bare " + test::ShellQuote(base) + " && git init -q --bare " +
                test::ShellQuote(fork) + " && git init -q --bare " + test::ShellQuote(loose));
    // Neighbours in id order go to different stores: the longest shared prefixes (5 digits or more
    // among 3000 ids) are between two packs or a pack and a loose object.
    const std::vector<std::string> blobs = Blobs("base", 3000);
    std::vector<std::string> part[3];
    for (size_t i = 0; i < blobs.size(); ++i) part[i % 3].push_back(blobs[i]);
    Pack(base, part[0], dir_->File("a.stream"));
    Pack(base, part[1], dir_->File("b.stream"));
    Loose(base, part[2]);
    test::WriteFile(fork + "/objects/info/alternates", base + "/objects\n");
    const std::vector<std::string> own = Blobs("fork", 900);
    std::vector<std::string> fork_part[2];
    for (size_t i = 0; i < own.size(); ++i) fork_part[i % 2].push_back(own[i]);
    Pack(fork, fork_part[0], dir_->File("f.stream"));
    Loose(fork, fork_part[1]);
    Loose(loose, Blobs("loose", 900));
    test::Shell("cp -r " + test::ShellQuote(base) + " " + test::ShellQuote(dir_->File("midx.git")) +
                " && git -C " + test::ShellQuote(dir_->File("midx.git")) +
                " multi-pack-index write 2>/dev/null");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // Every object of `repo` (its alternates' too), ids near them that are not objects, and the null
  // id, at minimum lengths 4..12: UniqueAbbrev's answer must be libgit2's.
  static void ExpectLibgit2sAnswers(const std::string& repo, bool reader_answers) {
    const Opened o = Open(repo);
    ASSERT_NE(o.odb, nullptr);
    std::vector<git_oid> ids;
    ASSERT_EQ(git_odb_foreach(
                  o.odb.get(),
                  [](const git_oid* id, void* out) {
                    static_cast<std::vector<git_oid>*>(out)->push_back(*id);
                    return 0;
                  },
                  &ids),
              0);
    ASSERT_GT(ids.size(), 800u);
    const size_t objects = ids.size();
    for (size_t i = 0; i < objects; i += 7) {
      for (int digit : {5, 6, 12, 39}) {  // flip one digit: shares `digit` with an object
        git_oid near = ids[i];
        near.id[digit / 2] ^= digit % 2 == 0 ? 0x10 : 0x01;
        ids.push_back(near);
      }
    }
    ids.push_back(git_oid{});
    int longest = 0;
    for (const git_oid& id : ids) {
      for (int min_len = 4; min_len <= 12; ++min_len) {
        const std::string ours = UniqueAbbrev(o.repo.get(), o.odb.get(), id, min_len);
        ASSERT_EQ(ours, UniqueAbbrevThroughOdb(o.odb.get(), id, min_len))
            << repo << " " << git_oid_tostr_s(&id) << " at " << min_len;
        if (min_len == 4 && &id - ids.data() < static_cast<ptrdiff_t>(objects))
          longest = std::max(longest, static_cast<int>(ours.size()));
      }
    }
    EXPECT_GE(longest, 6) << "no long shared prefix among the objects";
    std::string folder;
    ASSERT_TRUE(ObjectsFolder(o.repo.get(), &folder));
    int shared = 0;
    std::vector<std::string_view> folders;
    EXPECT_EQ(ThreadPackReader().SharedHexDigits(folder, ids[0], &shared, &folders),
              reader_answers);
  }

  static test::TempDir* dir_;
};

test::TempDir* AbbrevTest::dir_ = nullptr;

TEST_F(AbbrevTest, TwoPacksAndLooseObjectsAsLibgit2) {
  ExpectLibgit2sAnswers(dir_->File("base.git"), true);
}

TEST_F(AbbrevTest, ForkThroughAlternatesAsLibgit2) {
  ExpectLibgit2sAnswers(dir_->File("fork.git"), true);
}

TEST_F(AbbrevTest, LooseObjectsOnlyAsLibgit2) {
  ExpectLibgit2sAnswers(dir_->File("loose.git"), true);
}

TEST_F(AbbrevTest, MultiPackIndexIsLibgit2s) {
  ExpectLibgit2sAnswers(dir_->File("midx.git"), false);
}

TEST_F(AbbrevTest, TheNullIdIsZeros) {
  const Opened o = Open(dir_->File("base.git"));
  ASSERT_NE(o.odb, nullptr);
  EXPECT_EQ(UniqueAbbrev(o.repo.get(), o.odb.get(), git_oid{}, 7), "0000000");
  EXPECT_EQ(UniqueAbbrev(o.repo.get(), o.odb.get(), git_oid{}, 2), "0000");
}

// Nothing is remembered between answers: a loose object that shares more digits than any other
// lengthens the next answer at once.
TEST_F(AbbrevTest, ALooseObjectWrittenLaterCounts) {
  const std::string repo = dir_->File("late.git");
  test::Shell("git init -q --bare " + test::ShellQuote(repo));
  const std::vector<std::string> blobs = Blobs("late", 3000);
  Pack(repo, blobs, dir_->File("late.stream"));
  const Opened o = Open(repo);
  ASSERT_NE(o.odb, nullptr);
  // A blob not written yet whose id shares with a packed one at least as many digits as that
  // one's abbreviation has now.
  std::vector<git_oid> packed;
  for (const std::string& b : blobs) packed.push_back(BlobId(b));
  std::sort(packed.begin(), packed.end(),
            [](const git_oid& a, const git_oid& b) { return git_oid_cmp(&a, &b) < 0; });
  std::string late, before;
  git_oid neighbour{};
  for (int i = 0; late.empty() && i < 1000000; ++i) {
    const std::string content = "candidate " + std::to_string(i) + "\n";
    const git_oid id = BlobId(content);
    const auto at = std::lower_bound(
        packed.begin(), packed.end(), id,
        [](const git_oid& a, const git_oid& b) { return git_oid_cmp(&a, &b) < 0; });
    for (auto p = at == packed.begin() ? at : at - 1; p != packed.end() && p <= at; ++p) {
      if (git_oid_ncmp(&id, &*p, 5) != 0) continue;
      const std::string now = UniqueAbbrev(o.repo.get(), o.odb.get(), *p, 4);
      if (git_oid_ncmp(&id, &*p, now.size()) != 0) continue;
      late = content;
      neighbour = *p;
      before = now;
      break;
    }
  }
  ASSERT_FALSE(late.empty());
  Loose(repo, {late});
  const std::string after = UniqueAbbrev(o.repo.get(), o.odb.get(), neighbour, 4);
  EXPECT_EQ(after, UniqueAbbrevThroughOdb(o.odb.get(), neighbour, 4));
  EXPECT_GT(after.size(), before.size());
  EXPECT_GE(after.size(), 6u);
}

}  // namespace
}  // namespace shellac::gitfrag
