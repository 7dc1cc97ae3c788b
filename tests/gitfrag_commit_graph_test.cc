// CommitGraph (gitfrag/commit_graph.h) on files git writes: every commit's parents, date and tree
// against libgit2's reading of the commit object, Bloom answers against the real first-parent
// diffs (never "unchanged" for a path that changed), a split chain, and damaged files (refused or
// answered "don't know", never a crash). DateWalk gives the same commits with a graph as without.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gitfrag/commit_graph.h"
#include "gitfrag/git.h"
#include "gitfrag/gitfrag.h"
#include "gitfrag/history.h"
#include "gitfrag/history_index.h"
#include "gitfrag/render.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

using test::ReadFile;
using test::GitIdentity;
using test::MakeFixture;
using test::kThor;
using test::Shell;
using test::ShellQuote;
using test::TempDir;

// Merges (two parents and an octopus), a second root, nested folders, a commit with no change, one
// with more than git's 512 changed paths (a truncated filter), a name with bytes >= 0x80, a folder
// replaced by a file.
constexpr const char* kScript = R"SH(
set -e
git init -q -b master work
cd work
c() { GIT_COMMITTER_DATE="2021-03-04T06:$1:00-0700" git commit -q --allow-empty -m "$2"; }
mkdir -p a/b/c d
echo 1 > a/b/c/deep.txt; echo top > top.txt; echo d > d/f
git add -A; c 01 root
echo 2 > a/b/c/deep.txt; git add -A; c 02 deep
echo e > d/e; git add -A; c 03 'd/e'
c 04 empty
git checkout -q -b side HEAD~2
echo s > side.txt; git add -A; c 05 side
echo t > top.txt; git add -A; c 06 'side top'
git checkout -q master
git merge -q --no-edit side; GIT_COMMITTER_DATE="2021-03-04T06:07:00-0700" git commit -q --amend --no-edit
git checkout -q -b o1 HEAD~1; echo o1 > o1.txt; git add -A; c 08 o1
git checkout -q -b o2 master~1; echo o2 > o2.txt; git add -A; c 09 o2
git checkout -q master
git merge -q --no-edit o1 o2; GIT_COMMITTER_DATE="2021-03-04T06:10:00-0700" git commit -q --amend --no-edit
mkdir many; for i in $(seq 1 600); do echo $i > many/f$i; done; git add -A; c 11 'many files'
echo u > "d/ünï"; git add -A; c 12 'high bytes'
git rm -q -r d; echo now-a-file > d; git add -A; c 13 'folder to file'
echo 3 > a/b/c/deep.txt; git add -A; c 14 'deep again'
git checkout -q --orphan other; git rm -q -r --cached .; rm -rf ./*
echo lonely > only.txt; git add only.txt; c 15 'second root'
git checkout -q master
git merge -q --no-edit --allow-unrelated-histories other; GIT_COMMITTER_DATE="2021-03-04T06:16:00-0700" git commit -q --amend --no-edit
)SH";

// Paths asked about: every path and folder of every tree, plus some never there.
std::vector<std::string> AllPaths(const std::string& repo) {
  std::set<std::string> paths = {"nothing", "a/nothing", "a/b/c/nothing", "many/f601", "d/e/x"};
  std::istringstream lines(
      Shell("git -C " + ShellQuote(repo) + " log --all --format= --name-only -c -m"));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '"') continue;  // quoted names: the ü one is added below
    for (size_t slash = line.find('/'); slash != std::string::npos; slash = line.find('/', slash + 1))
      paths.insert(line.substr(0, slash));
    paths.insert(line);
  }
  paths.insert("d/\xc3\xbcn\xc3\xaf");
  return {paths.begin(), paths.end()};
}

struct PathState {
  bool present = false;
  uint32_t mode = 0;
  git_oid id{};
  bool operator==(const PathState& o) const {
    return present == o.present && (!present || (mode == o.mode && git_oid_equal(&id, &o.id)));
  }
};

PathState StateOf(git_repository* repo, const git_oid& tree_id, const std::string& path) {
  PathState state;
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo, &tree_id) != 0) return state;
  const TreePtr tree(raw);
  git_tree_entry* entry = nullptr;
  if (git_tree_entry_bypath(&entry, tree.get(), path.c_str()) != 0) return state;
  const TreeEntryPtr owned(entry);
  state.present = true;
  state.mode = git_tree_entry_filemode(entry);
  state.id = *git_tree_entry_id(entry);
  return state;
}

class CommitGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureLibgit2();
    MakeFixture(dir_, kScript, GitIdentity{"A", "C", kThor.author_date, ""});
    git_dir_ = dir_.File("work/.git");
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, git_dir_.c_str()), 0);
    repo_.reset(raw);
    std::istringstream ids(Shell("git -C " + ShellQuote(git_dir_) + " rev-list --all"));
    for (std::string id; std::getline(ids, id);) {
      git_oid oid;
      ASSERT_EQ(git_oid_fromstr(&oid, id.c_str()), 0);
      commits_.push_back(oid);
    }
    ASSERT_EQ(commits_.size(), 16u);
  }

  void Git(const std::string& args) {
    Shell("env HOME=" + ShellQuote(dir_.path()) + " GIT_CONFIG_NOSYSTEM=1 git -C " +
          ShellQuote(git_dir_) + " " + args + " 2>&1");
  }

  // Every commit's links equal libgit2's; every Bloom "unchanged" is true. Returns how many
  // (commit, path) pairs that did not change the filters proved unchanged.
  size_t CheckGraph(const CommitGraph& graph) {
    EXPECT_EQ(graph.size(), commits_.size());
    const std::vector<std::string> paths = AllPaths(git_dir_);
    size_t proved = 0, unchanged = 0;
    std::vector<uint32_t> parents;
    for (const git_oid& id : commits_) {
      const uint32_t pos = graph.Find(id);
      EXPECT_NE(pos, CommitGraph::kNoPosition) << OidHex(id);
      if (pos == CommitGraph::kNoPosition) continue;
      const git_oid same = graph.Id(pos);
      EXPECT_TRUE(git_oid_equal(&id, &same));
      git_commit* raw = nullptr;
      EXPECT_EQ(git_commit_lookup(&raw, repo_.get(), &id), 0);
      const CommitPtr commit(raw);
      EXPECT_EQ(graph.Time(pos), git_commit_time(raw)) << OidHex(id);
      const git_oid tree = graph.Tree(pos);
      EXPECT_TRUE(git_oid_equal(&tree, git_commit_tree_id(raw))) << OidHex(id);
      EXPECT_TRUE(graph.Parents(pos, &parents));
      EXPECT_EQ(parents.size(), git_commit_parentcount(raw)) << OidHex(id);
      for (size_t i = 0; i < parents.size() && i < git_commit_parentcount(raw); ++i) {
        const git_oid parent = graph.Id(parents[i]);
        EXPECT_TRUE(git_oid_equal(&parent, git_commit_parent_id(raw, i))) << OidHex(id) << " " << i;
      }
      for (const std::string& path : paths) {
        const PathState mine = StateOf(repo_.get(), tree, path);
        PathState first;  // a root commit's "parent" has nothing
        if (git_commit_parentcount(raw) > 0) {
          git_commit* p = nullptr;
          EXPECT_EQ(git_commit_parent(&p, raw, 0), 0);
          const CommitPtr parent(p);
          first = StateOf(repo_.get(), *git_commit_tree_id(p), path);
        }
        const bool maybe = graph.MaybeChanged(pos, graph.Keys(path));
        if (!(mine == first)) {
          EXPECT_TRUE(maybe) << "false negative: " << OidHex(id) << " " << path;
        } else {
          ++unchanged;
          if (!maybe) ++proved;
        }
      }
    }
    EXPECT_GT(unchanged, 0u);
    return proved * 100 / (unchanged ? unchanged : 1);
  }

  TempDir dir_;
  std::string git_dir_;
  RepositoryPtr repo_;
  std::vector<git_oid> commits_;
};

TEST_F(CommitGraphTest, NoGraphIsNull) {
  std::string error;
  EXPECT_EQ(CommitGraph::Open(git_dir_, &error), nullptr);
  EXPECT_EQ(error, "no commit-graph");
  EXPECT_EQ(CommitGraph::ForRepository(repo_.get()), nullptr);
}

// Forks that borrow the base's objects (alternates) and have no graph of their own get the base's
// graph, one open graph for all of them; a graph written again in the base reaches every fork
// (each looks at the files again after a second: waited for, up to 10 s).
TEST_F(CommitGraphTest, ForksShareTheirBaseGraph) {
  Git("commit-graph write --reachable --changed-paths");
  std::vector<RepositoryPtr> forks;
  for (const char* name : {"fork1.git", "fork2.git"}) {
    Shell("git clone -q --bare --shared " + ShellQuote(git_dir_) + " " +
          ShellQuote(dir_.File(name)) + " 2>&1");
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, dir_.File(name).c_str()), 0) << name;
    forks.emplace_back(raw);
  }
  const auto first = CommitGraph::ForRepository(forks[0].get());
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(first->has_bloom());
  EXPECT_EQ(CommitGraph::ForRepository(forks[1].get()), first) << "the same open graph";

  Git("commit-graph write --reachable --no-changed-paths");
  auto await_new = [&](git_repository* repo) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto graph = CommitGraph::ForRepository(repo);
    while (graph == first && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      graph = CommitGraph::ForRepository(repo);
    }
    return graph;
  };
  const auto second = await_new(forks[0].get());
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, first);
  EXPECT_FALSE(second->has_bloom()) << "the graph written again, without filters";
  EXPECT_EQ(await_new(forks[1].get()), second) << "the other fork shares the new one";
  EXPECT_EQ(second->size(), commits_.size());
}

TEST_F(CommitGraphTest, SingleFileEqualsObjectsAndBloomHasNoFalseNegative) {
  Git("commit-graph write --reachable --changed-paths");
  std::string error;
  const auto graph = CommitGraph::Open(git_dir_, &error);
  ASSERT_NE(graph, nullptr) << error;
  EXPECT_EQ(graph->layers(), 1u);
  EXPECT_TRUE(graph->has_bloom());
  // Most unchanged pairs are proved so (7 hashes, 10 bits per entry): the filters are read.
  EXPECT_GE(CheckGraph(*graph), 80u);
  // The 600-file commit's filter is truncated: "maybe" for anything, even a path never there.
  git_oid many;
  ASSERT_EQ(git_oid_fromstr(&many, Shell("git -C " + ShellQuote(git_dir_) +
                                         " rev-parse ':/many files'").substr(0, 40).c_str()),
            0);
  EXPECT_TRUE(graph->MaybeChanged(graph->Find(many), graph->Keys("nothing")));
  // A commit git has no graph entry for.
  git_oid unknown;
  git_oid_fromstr(&unknown, "0123456789012345678901234567890123456789");
  EXPECT_EQ(graph->Find(unknown), CommitGraph::kNoPosition);
}

TEST_F(CommitGraphTest, WithoutBloomEverythingMaybe) {
  Git("commit-graph write --reachable --no-changed-paths");
  const auto graph = CommitGraph::Open(git_dir_, nullptr);
  ASSERT_NE(graph, nullptr);
  EXPECT_FALSE(graph->has_bloom());
  EXPECT_EQ(CheckGraph(*graph), 0u);
}

TEST_F(CommitGraphTest, SplitChain) {
  // A base layer of the first commits, then a layer on top for the rest.
  Shell("cd " + ShellQuote(git_dir_) + " && git rev-parse master~3 | env HOME=" +
        ShellQuote(dir_.path()) +
        " git commit-graph write --stdin-commits --changed-paths --split 2>&1");
  Git("commit-graph write --reachable --changed-paths --split=no-merge");
  std::string error;
  const auto graph = CommitGraph::Open(git_dir_, &error);
  ASSERT_NE(graph, nullptr) << error;
  EXPECT_EQ(graph->layers(), 2u);
  EXPECT_GE(CheckGraph(*graph), 80u);
  // A chain whose top layer is damaged keeps its base (as git does).
  const std::string chain = ReadFile(git_dir_ + "/objects/info/commit-graphs/commit-graph-chain");
  const std::string top = chain.substr(41, 40);
  const std::string top_file = git_dir_ + "/objects/info/commit-graphs/graph-" + top + ".graph";
  std::string bytes = ReadFile(top_file);
  bytes[4] = 9;  // version
  Shell("chmod u+w " + ShellQuote(top_file));
  test::WriteFile(top_file, bytes);
  const auto base = CommitGraph::Open(git_dir_, nullptr);
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->layers(), 1u);
  EXPECT_LT(base->size(), commits_.size());
}

TEST_F(CommitGraphTest, DamagedFilesAreRefusedOrAnsweredSafely) {
  Git("commit-graph write --reachable --changed-paths");
  const std::string good = ReadFile(git_dir_ + "/objects/info/commit-graph");
  ASSERT_NE(CommitGraph::FromBytes({good}, nullptr), nullptr);
  auto refused = [&](std::string bytes, const char* what) {
    std::string error;
    EXPECT_EQ(CommitGraph::FromBytes({bytes}, &error), nullptr) << what;
    EXPECT_FALSE(error.empty()) << what;
  };
  refused(good.substr(0, 30), "truncated");
  refused(good.substr(0, good.size() / 2), "half");
  std::string bad = good;
  bad[0] = 'X';
  refused(bad, "signature");
  bad = good;
  bad[5] = 2;
  refused(bad, "SHA-256");
  bad = good;
  bad[7] = 1;
  refused(bad, "a base that is not there");
  // Chunk offsets: the first chunk's start past the end of the file.
  bad = good;
  bad[8 + 4] = '\x7f';
  refused(bad, "chunk offset");
  // Random damage: whatever is accepted answers within bounds (ASan/UBSan builds check reads).
  std::mt19937 random(7);
  for (int round = 0; round < 3000; ++round) {
    bad = good;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) bad[random() % bad.size()] = static_cast<char>(random());
    const auto graph = CommitGraph::FromBytes({bad}, nullptr);
    if (!graph) continue;
    std::vector<uint32_t> parents;
    const auto keys = graph->Keys("a/b/c/deep.txt");
    for (uint32_t pos = 0; pos < graph->size(); ++pos) {
      if (graph->Parents(pos, &parents)) {
        for (const uint32_t p : parents) ASSERT_LT(p, graph->size());
      }
      graph->Time(pos);
      graph->MaybeChanged(pos, keys);
      EXPECT_EQ(graph->Find(graph->Id(pos)), pos);
    }
  }
}

// The walk shows the same commits, in the same order, with a graph (single file, chain) and
// without one, for every path and without a path.
TEST_F(CommitGraphTest, DateWalkSameWithAndWithoutGraph) {
  std::vector<std::string> paths = AllPaths(git_dir_);
  paths.push_back("");
  git_oid head;
  ASSERT_EQ(git_reference_name_to_id(&head, repo_.get(), "refs/heads/master"), 0);
  // The same repository twice: a copy without a graph, the original with one.
  const std::string plain_dir = dir_.File("plain.git");
  Shell("cp -a " + ShellQuote(git_dir_) + " " + ShellQuote(plain_dir));
  Git("commit-graph write --reachable --changed-paths");
  ASSERT_NE(CommitGraph::Open(git_dir_, nullptr), nullptr);
  auto walk = [&](const std::string& dir, const std::string& path) {
    RepositoryPtr fresh;
    git_repository* raw = nullptr;
    EXPECT_EQ(git_repository_open(&raw, dir.c_str()), 0);
    fresh.reset(raw);
    DateWalk w(fresh.get(), std::vector<git_oid>{head}, nullptr, path);
    std::string out;
    git_oid id;
    while (w.NextId(&id)) out += OidHex(id).substr(0, 8) + " ";
    return out;
  };
  size_t shown = 0;
  for (const std::string& path : paths) {
    const std::string with = walk(git_dir_, path);
    EXPECT_EQ(with, walk(plain_dir, path)) << path;
    shown += with.size();
  }
  EXPECT_GT(shown, 0u);
  PathChangeFilter filter(repo_.get(), "a/b/c/deep.txt");
  EXPECT_TRUE(filter.usable());
  git_oid empty;
  ASSERT_EQ(git_oid_fromstr(&empty, Shell("git -C " + ShellQuote(git_dir_) +
                                          " rev-parse ':/^empty'").substr(0, 40).c_str()),
            0);
  EXPECT_FALSE(filter.MaybeChanged(empty));
}

// The in-memory index (history_index.h) is a commit-graph image the same reader reads: the same
// links as the objects, Bloom filters without false negatives.
TEST_F(CommitGraphTest, InMemoryIndexEqualsObjects) {
  std::string image, error;
  ASSERT_TRUE(HistoryIndex::Build(repo_.get(), uint64_t{1} << 30, &image, &error)) << error;
  const auto graph = CommitGraph::FromImage(image, &error);
  ASSERT_NE(graph, nullptr) << error;
  EXPECT_TRUE(graph->has_bloom());
  EXPECT_EQ(graph->bytes(), image.size());
  EXPECT_GE(CheckGraph(*graph), 80u);
  // The same commits as git's own file.
  Git("commit-graph write --reachable --changed-paths");
  const auto file = CommitGraph::Open(git_dir_, nullptr);
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(file->size(), graph->size());
  for (uint32_t pos = 0; pos < graph->size(); ++pos) {
    const git_oid a = graph->Id(pos), b = file->Id(pos);
    EXPECT_TRUE(git_oid_equal(&a, &b)) << pos;
  }
}

// history-index-memory bounds the image: links and part of the filters, or nothing.
TEST_F(CommitGraphTest, InMemoryIndexWithinItsBudget) {
  std::string whole, error;
  ASSERT_TRUE(HistoryIndex::Build(repo_.get(), uint64_t{1} << 30, &whole, &error)) << error;
  std::string part;
  const uint64_t budget = whole.size() - 40;  // a few filters do not fit
  ASSERT_TRUE(HistoryIndex::Build(repo_.get(), budget, &part, &error)) << error;
  EXPECT_LE(part.size(), budget);
  EXPECT_LT(part.size(), whole.size());
  const auto graph = CommitGraph::FromImage(part, &error);
  ASSERT_NE(graph, nullptr) << error;
  CheckGraph(*graph);  // still exact: commits without a filter answer "maybe"
  EXPECT_FALSE(HistoryIndex::Build(repo_.get(), 1500, &part, &error));
  EXPECT_EQ(error, "the index would pass history-index-memory");
}

// Built in the background on first use; walks give the same commits before and after.
TEST_F(CommitGraphTest, BackgroundIndexServesWalks) {
  git_oid head;
  ASSERT_EQ(git_reference_name_to_id(&head, repo_.get(), "refs/heads/master"), 0);
  const std::vector<std::string> paths = AllPaths(git_dir_);
  auto walk = [&](const std::string& path) {
    DateWalk w(repo_.get(), std::vector<git_oid>{head}, nullptr, path);
    std::string out;
    git_oid id;
    while (w.NextId(&id)) out += OidHex(id).substr(0, 8) + " ";
    return out;
  };
  HistoryIndex::SetMemoryBudget(0);
  std::vector<std::string> plain;
  for (const std::string& path : paths) plain.push_back(walk(path));
  EXPECT_EQ(HistoryIndex::For(repo_.get()), nullptr) << "none is built without a budget";

  HistoryIndex::SetMemoryBudget(uint64_t{64} << 20);
  const HistoryIndexMetrics before = HistoryIndexTotals();
  EXPECT_EQ(HistoryIndex::For(repo_.get()), nullptr) << "queued, not built while asked";
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  const auto index = HistoryIndex::For(repo_.get());
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->size(), commits_.size());
  const HistoryIndexMetrics after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + 1);
  EXPECT_EQ(after.commits, before.commits + commits_.size());
  EXPECT_EQ(after.bytes, before.bytes + index->bytes());
  EXPECT_EQ(after.budget_bytes, uint64_t{64} << 20);
  for (size_t i = 0; i < paths.size(); ++i) EXPECT_EQ(walk(paths[i]), plain[i]) << paths[i];
  EXPECT_TRUE(PathChangeFilter(repo_.get(), "top.txt").usable());
  HistoryIndex::SetMemoryBudget(0);
}

// The commits a path walk of `repo` from `start` shows, as short ids.
std::string PathLog(git_repository* repo, const git_oid& start, const std::string& path) {
  DateWalk w(repo, std::vector<git_oid>{start}, nullptr, path);
  std::string out;
  git_oid id;
  while (w.NextId(&id)) out += OidHex(id).substr(0, 8) + " ";
  return out;
}

RepositoryPtr OpenRepo(const std::string& dir) {
  git_repository* raw = nullptr;
  EXPECT_EQ(git_repository_open(&raw, dir.c_str()), 0) << dir;
  return RepositoryPtr(raw);
}

git_oid Head(git_repository* repo) {
  git_oid id{};
  EXPECT_EQ(git_reference_name_to_id(&id, repo, "HEAD"), 0);
  return id;
}

// Repositories that borrow their objects from one store (alternates) share one index: one build,
// started by the first fork that asks; a fork's own commit (in its own objects) is walked from its
// object, reported, and added by a refresh of the shared index.
TEST_F(CommitGraphTest, ForksShareOneIndex) {
  const std::string env = "env HOME=" + ShellQuote(dir_.path()) +
                          " GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org"
                          " GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org ";
  Shell("cd " + ShellQuote(dir_.path()) + " && " + env +
        "git clone -q --bare --shared work/.git fork.git 2>&1 && " + env +
        "git clone -q --shared work/.git own 2>&1 && cd own && echo own > top.txt && " + env +
        "GIT_COMMITTER_DATE=2021-03-05T00:00:00Z git commit -q -am 'own top' 2>&1");
  EXPECT_EQ(HistoryIndex::StoreOf(dir_.File("fork.git")), HistoryIndex::StoreOf(git_dir_));
  EXPECT_EQ(HistoryIndex::StoreOf(dir_.File("own/.git")), HistoryIndex::StoreOf(git_dir_));
  const RepositoryPtr fork = OpenRepo(dir_.File("fork.git"));
  const RepositoryPtr own = OpenRepo(dir_.File("own/.git"));
  const git_oid own_head = Head(own.get());
  // The fork's own commit is in its own objects, not in the store.
  {
    git_odb* raw = nullptr;
    ASSERT_EQ(git_repository_odb(&raw, repo_.get()), 0);
    const base::Owned<git_odb_free> odb(raw);
    EXPECT_FALSE(git_odb_exists(odb.get(), &own_head));
  }
  const std::vector<std::string> paths = {"top.txt", "a/b/c/deep.txt", "d", "only.txt", "nothing"};
  const git_oid head = Head(repo_.get());
  HistoryIndex::SetMemoryBudget(0);
  std::vector<std::string> plain, plain_own;
  for (const std::string& path : paths) {
    plain.push_back(PathLog(fork.get(), head, path));
    plain_own.push_back(PathLog(own.get(), own_head, path));
  }
  EXPECT_EQ(plain_own[0].substr(0, 8), OidHex(own_head).substr(0, 8)) << plain_own[0];

  HistoryIndex::SetDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  HistoryIndex::SetMemoryBudget(uint64_t{64} << 20);
  const HistoryIndexMetrics before = HistoryIndexTotals();
  EXPECT_EQ(HistoryIndex::For(fork.get()), nullptr) << "queued, not built while asked";
  // The same store: no second build (counted below). With no delay the first build may already
  // have finished on a loaded machine, so this one may find it: either answer is right.
  const auto same_store = HistoryIndex::For(repo_.get());
  if (same_store != nullptr) {
    EXPECT_EQ(same_store->size(), commits_.size());
  }
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  const auto index = HistoryIndex::For(fork.get());
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(HistoryIndex::For(repo_.get()), index);
  EXPECT_EQ(HistoryIndex::For(own.get()), index);
  // The store's own repository's refs were read: every commit, though the fork has none of them.
  EXPECT_EQ(index->size(), commits_.size());
  HistoryIndexMetrics after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + 1);
  EXPECT_EQ(after.stores, before.stores + 1);
  EXPECT_EQ(after.repositories, before.repositories + 3);
  EXPECT_EQ(after.commits, before.commits + commits_.size());
  for (size_t i = 0; i < paths.size(); ++i) EXPECT_EQ(PathLog(fork.get(), head, paths[i]), plain[i]);
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  EXPECT_EQ(HistoryIndexTotals().builds, before.builds + 1) << "walks inside the index miss nothing";

  // The fork's own commit: not in the index, walked from its object, the same pages.
  for (size_t i = 0; i < paths.size(); ++i)
    EXPECT_EQ(PathLog(own.get(), own_head, paths[i]), plain_own[i]) << paths[i];
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + 2);
  EXPECT_EQ(after.refreshes, before.refreshes + 1);
  EXPECT_EQ(after.failed, before.failed);
  const auto refreshed = HistoryIndex::For(own.get());
  ASSERT_NE(refreshed, nullptr);
  EXPECT_NE(refreshed, index);
  EXPECT_EQ(HistoryIndex::For(fork.get()), refreshed);
  EXPECT_EQ(refreshed->size(), commits_.size() + 1);
  EXPECT_NE(refreshed->Find(own_head), CommitGraph::kNoPosition);
  EXPECT_EQ(after.commits, before.commits + commits_.size() + 1);
  for (size_t i = 0; i < paths.size(); ++i)
    EXPECT_EQ(PathLog(own.get(), own_head, paths[i]), plain_own[i]) << paths[i];
  // Its filter was computed, the others' kept: "top.txt" changed, "only.txt" did not.
  const uint32_t pos = refreshed->Find(own_head);
  EXPECT_TRUE(refreshed->MaybeChanged(pos, refreshed->Keys("top.txt")));
  EXPECT_FALSE(refreshed->MaybeChanged(pos, refreshed->Keys("only.txt")));
  for (const git_oid& id : commits_) {
    const uint32_t a = index->Find(id), b = refreshed->Find(id);
    ASSERT_NE(b, CommitGraph::kNoPosition);
    EXPECT_EQ(index->Filter(a, 7), refreshed->Filter(b, 7)) << OidHex(id);
  }
  HistoryIndex::SetMemoryBudget(0);
  HistoryIndex::SetDelays(std::chrono::seconds(30), std::chrono::seconds(10));
}

// A repository that gains commits after its index was built: the first walk from the new commit
// reads it and reports the miss, a refresh adds it (reading only the new commit), and a walk that
// needs nothing new queues nothing.
TEST_F(CommitGraphTest, IndexRefreshedWithNewCommits) {
  HistoryIndex::SetDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  HistoryIndex::SetMemoryBudget(uint64_t{64} << 20);
  const HistoryIndexMetrics before = HistoryIndexTotals();
  EXPECT_EQ(HistoryIndex::For(repo_.get()), nullptr);
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  const auto index = HistoryIndex::For(repo_.get());
  ASSERT_NE(index, nullptr);
  const git_oid old_head = Head(repo_.get());
  const std::string old_log = PathLog(repo_.get(), old_head, "a/b/c/deep.txt");
  EXPECT_EQ(old_log.size(), 3 * 9u);  // root, deep, deep again
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  EXPECT_EQ(HistoryIndexTotals().builds, before.builds + 1) << "nothing missed, nothing rebuilt";

  Shell("cd " + ShellQuote(dir_.File("work")) + " && echo 4 > a/b/c/deep.txt && env HOME=" +
        ShellQuote(dir_.path()) +
        " GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.org"
        " GIT_COMMITTER_NAME=C GIT_COMMITTER_EMAIL=c@example.org"
        " GIT_COMMITTER_DATE=2021-03-05T00:00:00Z git commit -q -am 'deep 4' 2>&1");
  const RepositoryPtr fresh = OpenRepo(git_dir_);
  const git_oid new_head = Head(fresh.get());
  EXPECT_EQ(index->Find(new_head), CommitGraph::kNoPosition);
  const std::string log = PathLog(fresh.get(), new_head, "a/b/c/deep.txt");
  EXPECT_EQ(log, OidHex(new_head).substr(0, 8) + " " + old_log);
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  const HistoryIndexMetrics after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + 2);
  EXPECT_EQ(after.refreshes, before.refreshes + 1);
  const auto refreshed = HistoryIndex::For(fresh.get());
  ASSERT_NE(refreshed, nullptr);
  EXPECT_EQ(refreshed->size(), index->size() + 1);
  EXPECT_NE(refreshed->Find(new_head), CommitGraph::kNoPosition);
  EXPECT_EQ(PathLog(fresh.get(), new_head, "a/b/c/deep.txt"), log);
  // The blame's filter sees it too.
  EXPECT_FALSE(PathChangeFilter(fresh.get(), "top.txt").MaybeChanged(new_head));
  EXPECT_TRUE(PathChangeFilter(fresh.get(), "a/b/c/deep.txt").MaybeChanged(new_head));
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  EXPECT_EQ(HistoryIndexTotals().builds, before.builds + 2);
  HistoryIndex::SetMemoryBudget(0);
  HistoryIndex::SetDelays(std::chrono::seconds(30), std::chrono::seconds(10));
}

// A build that fails is tried again after its delay, at most kMaxFailures times in a row; a new
// budget tries again, and a repository that can be read again gets its index.
TEST_F(CommitGraphTest, FailedIndexBuildRetriedWithBackoff) {
  // A commit whose object is gone: the history cannot be read.
  const std::string parent =
      Shell("git -C " + ShellQuote(git_dir_) + " rev-parse HEAD~1").substr(0, 40);
  const std::string object = git_dir_ + "/objects/" + parent.substr(0, 2) + "/" + parent.substr(2);
  ASSERT_EQ(std::rename(object.c_str(), (object + ".away").c_str()), 0) << object;

  auto ask = [&] {  // For(), then until the builder is idle
    const auto index = HistoryIndex::For(repo_.get());
    EXPECT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
    return index;
  };
  HistoryIndex::SetDelays(std::chrono::hours(1), std::chrono::milliseconds(0));
  HistoryIndex::SetMemoryBudget(uint64_t{64} << 20);
  const HistoryIndexMetrics before = HistoryIndexTotals();
  EXPECT_EQ(ask(), nullptr);
  HistoryIndexMetrics after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + 1);
  EXPECT_EQ(after.failed, before.failed + 1);
  EXPECT_EQ(ask(), nullptr);
  EXPECT_EQ(HistoryIndexTotals().builds, before.builds + 1) << "not before its delay";

  HistoryIndex::SetDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  for (unsigned i = 0; i < 3 * HistoryIndex::kMaxFailures; ++i) EXPECT_EQ(ask(), nullptr);
  after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + HistoryIndex::kMaxFailures) << "bounded";
  EXPECT_EQ(after.failed, before.failed + HistoryIndex::kMaxFailures);
  EXPECT_EQ(after.retries, before.retries + HistoryIndex::kMaxFailures - 1);

  // Readable again; given up until the budget changes (a reload), then built.
  ASSERT_EQ(std::rename((object + ".away").c_str(), object.c_str()), 0);
  EXPECT_EQ(ask(), nullptr);
  EXPECT_EQ(HistoryIndexTotals().builds, before.builds + HistoryIndex::kMaxFailures);
  HistoryIndex::SetMemoryBudget(uint64_t{65} << 20);
  EXPECT_EQ(ask(), nullptr);
  const auto index = HistoryIndex::For(repo_.get());
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->size(), commits_.size());
  after = HistoryIndexTotals();
  EXPECT_EQ(after.builds, before.builds + HistoryIndex::kMaxFailures + 1);
  EXPECT_EQ(after.failed, before.failed + HistoryIndex::kMaxFailures);
  HistoryIndex::SetMemoryBudget(0);
  HistoryIndex::SetDelays(std::chrono::seconds(30), std::chrono::seconds(10));
}

// git's plain commit-graph (as `git gc` writes it: no changed-path filters) gives links but no
// Bloom answers: the in-memory index, which has them, is built and preferred for path walks.
TEST_F(CommitGraphTest, PlainGraphGetsTheIndexFilters) {
  Git("commit-graph write --reachable");
  const auto file = CommitGraph::Open(git_dir_, nullptr);
  ASSERT_NE(file, nullptr);
  ASSERT_FALSE(file->has_bloom());
  const git_oid head = Head(repo_.get());
  const std::vector<std::string> paths = AllPaths(git_dir_);
  HistoryIndex::SetMemoryBudget(0);
  std::vector<std::string> plain;
  for (const std::string& path : paths) plain.push_back(PathLog(repo_.get(), head, path));
  EXPECT_FALSE(PathChangeFilter(repo_.get(), "top.txt").usable());

  HistoryIndex::SetMemoryBudget(uint64_t{64} << 20);
  EXPECT_FALSE(PathChangeFilter(repo_.get(), "top.txt").usable()) << "queued, not built yet";
  ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::seconds(120)));
  const auto index = HistoryIndex::For(repo_.get());
  ASSERT_NE(index, nullptr);
  EXPECT_TRUE(PathChangeFilter(repo_.get(), "top.txt").usable());
  for (size_t i = 0; i < paths.size(); ++i)
    EXPECT_EQ(PathLog(repo_.get(), head, paths[i]), plain[i]) << paths[i];
  HistoryIndex::SetMemoryBudget(0);
}

}  // namespace
}  // namespace shellac::gitfrag
