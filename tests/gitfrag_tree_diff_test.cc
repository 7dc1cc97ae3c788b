// The own tree diff (gitfrag/tree_diff.h) and the blob-by-blob fragment against libgit2's generic
// diff on the same fixture: every commit's changed files (status, path, modes, ids, order) and the
// whole diff fragment, byte for byte, for every diff option the pages offer.
#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gitfrag/git.h"
#include "gitfrag/render.h"
#include "gitfrag/tree_diff.h"
#include "gitfrag/writer.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

using test::MakeFixture;
using test::kDated;
using test::Shell;
using test::ShellQuote;
using test::TempDir;

// One commit per edge case of a tree diff. Fixed identities and dates keep it repeatable.
constexpr const char* kScript = R"SH(
set -e
git init -q -b master work
cd work
git config core.autocrlf false
git config core.symlinks true
mkdir -p a/b/c d
seq 1 20 > a/b/c/deep.txt
echo top > top.txt
echo x > a-b
echo y > a.c
echo z > a/x
printf 'bin\000ary' > bin.dat
echo script > run.sh
ln -s top.txt link
: > empty
git add -A && git commit -q -m 'root: files, folders, a symlink, an empty file'
sed -i 's/^5$/five/' a/b/c/deep.txt && git commit -q -am 'nested subtree change'
echo x2 > a-b && echo y2 > a.c && echo z2 > a/x && git commit -q -am 'order: a-b, a.c, a/x'
chmod +x run.sh && git commit -q -am 'mode only'
chmod +x bin.dat && git commit -q -am 'binary mode only'
printf 'bin\000ary\001' > bin.dat && git commit -q -am 'binary change'
git rm -q top.txt && mkdir top.txt && echo inside > top.txt/f && git add -A && git commit -q -m 'file replaced by a folder'
git rm -q -r top.txt && echo top > top.txt && git add -A && git commit -q -m 'folder replaced by a file'
git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,sub && git commit -q -m 'submodule added'
git update-index --cacheinfo 160000,2222222222222222222222222222222222222222,sub && git commit -q -m 'submodule moved'
git rm -q --cached sub && git commit -q -m 'submodule removed'
rm link && ln -s a.c link && git add -A && git commit -q -m 'symlink retargeted'
rm link && echo 'now a file' > link && git add -A && git commit -q -m 'symlink becomes a file'
git rm -q --cached link && rm link && git update-index --add --cacheinfo 160000,3333333333333333333333333333333333333333,link && git commit -q -m 'file becomes a submodule'
git update-index --force-remove link && echo 'now a file' > link && git add link && git commit -q -m 'submodule becomes a file'
git mv a-b renamed-a-b && seq 1 50 > a/b/c/deep.txt && echo new > newfile && git add -A && git commit -q -m 'rename mixed with edits'
seq 1 50 | sed 's/^/line /' > doc.txt && git add doc.txt && git commit -q -m 'add doc'
sed -i 's/^line 7$/line  7 /; s/^line 30$/LINE 30/' doc.txt && git commit -q -am 'whitespace and a real change'
sed -i 's/^line 8$/line 8 /; s/^line 9$/line  9/' doc.txt && git commit -q -am 'whitespace only'
printf 'no newline' > nonl && git add nonl && git commit -q -m 'no newline'
printf 'no newline either' > nonl && git commit -q -am 'no newline changed'
git rm -q empty && git commit -q -m 'only a deletion'
printf 'x\n' > "$(printf 'caf\303\251 \042q\042\tt.txt')" && git add -A && git commit -q -m 'quoted names'
{ printf 'static int a_function_whose_signature_runs_far_past_eighty_bytes(int first_argument, int second)\n{\n'; seq 1 12; printf '}\n'; } > long.c && git add long.c && git commit -q -m 'add long.c'
sed -i 's/^10$/ten/' long.c && git commit -q -am 'hunk under a function line over 80 bytes'
mkdir -p n1/n2/n3 && echo n > n1/n2/n3/f && echo m > n1/g && git add -A && git commit -q -m 'only additions, nested'
git rm -q -r n1 && git commit -q -m 'only deletions, nested'
git checkout -q -b side HEAD~3
echo side > side.txt && sed -i 's/^line 1$/side 1/' doc.txt && git add -A && git commit -q -m 'side'
git checkout -q master
git merge -q --no-edit side
git checkout -q --orphan other
git rm -q -r --cached . && rm -rf ./*
echo lonely > only.txt && git add only.txt && git commit -q -m 'second root'
git checkout -q master
)SH";

// The commits `git rev-list REVS` lists in the repository at `git_dir`, newest first.
std::vector<CommitPtr> RevList(git_repository* repo, const std::string& git_dir,
                               const std::string& revs) {
  std::vector<CommitPtr> commits;
  std::istringstream ids(Shell("git -C " + ShellQuote(git_dir) + " rev-list " + revs));
  for (std::string id; std::getline(ids, id);) {
    if (id.empty()) continue;
    git_oid oid;
    git_commit* c = nullptr;
    if (git_oid_fromstr(&oid, id.c_str()) != 0 || git_commit_lookup(&c, repo, &oid) != 0) {
      ADD_FAILURE() << "cannot read commit " << id;
      continue;
    }
    commits.emplace_back(c);
  }
  return commits;
}

// The diff fragment of `commit` (against `other`, or its first parent) made the `how` way.
std::string FragmentOf(git_repository* repo, git_commit* commit, git_commit* other,
                       const DiffOptions& options, std::string_view path, FileDiffPath how) {
  std::string text;
  Writer w(&text);
  WriteDiffFragment(w, repo, commit, other, options, path, how);
  return text;
}

// The repository `script` makes in `dir` (its work tree "work"), opened into *repo, and the
// commits `git rev-list REVS` lists in it, newest first.
std::vector<CommitPtr> FixtureCommits(const TempDir& dir, const char* script,
                                      const std::string& revs, RepositoryPtr* repo) {
  EnsureLibgit2();
  MakeFixture(dir, script, kDated);
  const std::string git_dir = dir.File("work/.git");
  git_repository* raw = nullptr;
  EXPECT_EQ(git_repository_open(&raw, git_dir.c_str()), 0);
  repo->reset(raw);
  return raw != nullptr ? RevList(raw, git_dir, revs) : std::vector<CommitPtr>();
}

class TreeDiffFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureLibgit2();
    MakeFixture(dir_, kScript, kDated);
    bare_ = dir_.File("work/.git");
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, bare_.c_str()), 0);
    repo_.reset(raw);
    commits_ = RevList(repo_.get(), bare_, "--all");
    ASSERT_EQ(commits_.size(), 30u);
  }

  std::string Subject(git_commit* c) { return git_commit_summary(c); }

  TempDir dir_;
  std::string bare_;
  RepositoryPtr repo_;
  std::vector<CommitPtr> commits_;
};

std::string Describe(git_delta_t status, const char* path, uint32_t old_mode, uint32_t new_mode,
                     const git_oid& old_id, const git_oid& new_id) {
  char line[256];
  std::snprintf(line, sizeof line, "%d %s %06o %06o %s %s\n", static_cast<int>(status), path,
                old_mode, new_mode, OidHex(old_id).c_str(), OidHex(new_id).c_str());
  return line;
}

bool HasKindChange(const CommitFiles& files) {
  for (const FileDiff& f : files.files)
    if (f.delta.status == GIT_DELTA_TYPECHANGE) return true;
  return false;
}

TEST_F(TreeDiffFixture, ChangesEqualLibgit2TreeToTree) {
  for (const auto& commit : commits_) {
    git_tree* raw = nullptr;
    ASSERT_EQ(git_commit_tree(&raw, commit.get()), 0);
    TreePtr new_tree(raw);
    TreePtr old_tree;
    if (git_commit_parentcount(commit.get()) > 0) {
      git_commit* parent = nullptr;
      ASSERT_EQ(git_commit_parent(&parent, commit.get(), 0), 0);
      CommitPtr owned(parent);
      ASSERT_EQ(git_commit_tree(&raw, parent), 0);
      old_tree.reset(raw);
    }
    std::vector<TreeChange> changes;
    std::string reason;
    ASSERT_TRUE(DiffTrees(repo_.get(), old_tree.get(), new_tree.get(), &changes, &reason))
        << reason;
    std::string ours;
    for (const auto& c : changes)
      ours += Describe(c.status, c.path.c_str(), c.old_mode, c.new_mode, c.old_id, c.new_id);

    // A kind change is one change, as git's diff-tree gives it.
    git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
    opts.flags = GIT_DIFF_INCLUDE_TYPECHANGE;
    git_diff* raw_diff = nullptr;
    ASSERT_EQ(git_diff_tree_to_tree(&raw_diff, repo_.get(), old_tree.get(), new_tree.get(), &opts),
              0);
    DiffPtr diff(raw_diff);
    std::string theirs;
    for (size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
      const git_diff_delta* d = git_diff_get_delta(diff.get(), i);
      theirs += Describe(d->status, d->new_file.path, d->old_file.mode, d->new_file.mode,
                         d->old_file.id, d->new_file.id);
    }
    EXPECT_EQ(ours, theirs) << Subject(commit.get());
    EXPECT_FALSE(ours.empty()) << Subject(commit.get()) << ": every fixture commit changes a file";
  }
}

// A path whose kind changes (symlink, file, submodule) is one change with both sides, git
// diff-tree's 'T', not a deletion and an addition.
TEST_F(TreeDiffFixture, KindChangeIsOneChange) {
  const std::pair<const char*, std::pair<uint32_t, uint32_t>> cases[] = {
      {"symlink becomes a file", {0120000, 0100644}},
      {"file becomes a submodule", {0100644, 0160000}},
      {"submodule becomes a file", {0160000, 0100644}}};
  for (const auto& [subject, modes] : cases) {
    git_commit* commit = nullptr;
    for (const auto& c : commits_)
      if (Subject(c.get()) == subject) commit = c.get();
    ASSERT_NE(commit, nullptr) << subject;
    git_commit* parent = nullptr;
    ASSERT_EQ(git_commit_parent(&parent, commit, 0), 0);
    CommitPtr owned(parent);
    git_tree *raw_old = nullptr, *raw_new = nullptr;
    ASSERT_EQ(git_commit_tree(&raw_old, parent), 0);
    TreePtr old_tree(raw_old);
    ASSERT_EQ(git_commit_tree(&raw_new, commit), 0);
    TreePtr new_tree(raw_new);
    std::vector<TreeChange> changes;
    std::string reason;
    ASSERT_TRUE(DiffTrees(repo_.get(), old_tree.get(), new_tree.get(), &changes, &reason));
    ASSERT_EQ(changes.size(), 1u) << subject;
    EXPECT_EQ(changes[0].status, GIT_DELTA_TYPECHANGE) << subject;
    EXPECT_EQ(changes[0].path, "link");
    EXPECT_EQ(changes[0].old_mode, modes.first) << subject;
    EXPECT_EQ(changes[0].new_mode, modes.second) << subject;
    EXPECT_FALSE(git_oid_is_zero(&changes[0].old_id));
    EXPECT_FALSE(git_oid_is_zero(&changes[0].new_id));
  }
}

TEST_F(TreeDiffFixture, FragmentEqualsTheLibgit2Path) {
  size_t own = 0;
  for (const auto& commit : commits_) {
    bool used_own = false;
    CommitFiles files;
    std::string reason;
    ASSERT_TRUE(CommitFileDiffs(repo_.get(), commit.get(), nullptr, DiffOptions{}, "", &files,
                                &reason, FileDiffPath::kOwn, &used_own))
        << reason;
    own += used_own;
    // libgit2's patch of a kind change (GIT_DELTA_TYPECHANGE) has no lines: the reference does not
    // show one as git and cgit do. KindChangesEqualCgit (gitfrag-parity) compares those with cgit.
    if (HasKindChange(files)) continue;
    for (int context : {3, 1, 0}) {
      for (bool ignorews : {false, true}) {
        for (int dt : {0, 1, 2}) {
          DiffOptions options;
          options.context = context;
          options.ignorews = ignorews;
          options.dt = dt;
          options.abbrev = 7;
          EXPECT_EQ(FragmentOf(repo_.get(), commit.get(), nullptr, options, "", FileDiffPath::kOwn),
                    FragmentOf(repo_.get(), commit.get(), nullptr, options, "",
                               FileDiffPath::kLibgit2))
              << Subject(commit.get()) << " context=" << context
                                  << " ignorews=" << ignorews << " dt=" << dt;
        }
      }
    }
  }
  // Every commit takes the own path, renames paired by gitfrag's detection (renames.h) where
  // libgit2's pairs the same files on this fixture.
  EXPECT_EQ(own, commits_.size());
}

// The hunks the own line diff makes for the fragment (CommitFiles::own_patches) where libgit2's
// xdiff could place them otherwise: blocks that slide, changes exactly 2 * context lines apart and
// one more, missing final newlines on either side and in the context, CRLF lines, files emptied
// and filled, binary to text and back, a mode change with an edit, a rename with edits, changes at
// the first and last lines, and long files of few distinct lines changed all over (where xdiff's
// search gives up on a minimal diff unless asked for one).
constexpr const char* kHunkScript = R"SH(
set -e
git init -q -b master work
cd work
git config core.autocrlf false
printf 'a\nb\nc\na\nb\nc\na\nb\nc\nend\n' > slide.txt
seq 1 40 > gaps.txt
printf 'one\ntwo\nthree\nfour' > nonl.txt
printf 'one\r\ntwo\r\nthree\r\n' > crlf.txt
printf 'text\n' > kind.dat
seq 1 30 | sed 's/^/moved line /' > old-name.txt
printf 'x\n' > emptied.txt
: > filled.txt
echo run > run.sh
awk 'BEGIN { srand(7); for (i = 0; i < 1500; i++) print int(rand() * 12) }' > few.txt
git add -A && git commit -q -m 'root'
printf 'a\nb\nc\na\nb\nc\na\nb\nc\na\nb\nc\nend\n' > slide.txt && git commit -q -am 'a block that slides'
sed -i 's/^10$/ten/; s/^17$/seventeen/; s/^30$/thirty/; s/^38$/x/' gaps.txt && git commit -q -am 'changes 6 and 7 lines apart'
printf 'one\ntwo\nthree\nfour\n' > nonl.txt && git commit -q -am 'final newline added'
printf 'one\nTWO\nthree\nfour' > nonl.txt && git commit -q -am 'final newline removed, context without one'
printf 'ONE\nTWO\nthree\nfour' > nonl.txt && git commit -q -am 'context without a final newline'
printf 'one\r\nTWO\r\nthree\n' > crlf.txt && git commit -q -am 'crlf lines'
: > emptied.txt && printf 'now\nfull\n' > filled.txt && git commit -q -am 'emptied and filled'
printf 'bin\000ary\n' > kind.dat && git commit -q -am 'text becomes binary'
printf 'text again\n' > kind.dat && git commit -q -am 'binary becomes text'
chmod +x run.sh && echo run2 >> run.sh && git commit -q -am 'mode change with an edit'
git mv old-name.txt new-name.txt && sed -i 's/^moved line 15$/edited/' new-name.txt && git commit -q -am 'rename with an edit'
sed -i '1s/.*/first/; $s/.*/last/' gaps.txt && git commit -q -am 'first and last lines'
awk 'BEGIN { srand(8) } { r = rand(); if (r < 0.3) next; print; if (r > 0.8) print int(rand() * 12) }' few.txt > few.new && mv few.new few.txt && git commit -q -am 'few distinct lines changed all over'
printf 'a\nb\nc\nend\n' > slide.txt && git commit -q -am 'blocks removed'
)SH";

// The files of `commit`'s diff against its first parent with the own patches, as the fragment,
// patch and rawdiff make them; false (a test failure) when they cannot be made.
bool OwnPatchFiles(git_repository* repo, git_commit* commit, CommitFiles* files) {
  files->own_patches = true;
  std::string reason;
  const bool made = CommitFileDiffs(repo, commit, nullptr, DiffOptions{}, "", files, &reason,
                                    FileDiffPath::kOwnRaw);
  EXPECT_TRUE(made) << reason;
  return made;
}

// The fragment of `commit` made the own way (kOwnRaw) equals libgit2's path's, in both layouts
// and each of `contexts`.
void ExpectOwnFragmentsEqualLibgit2s(git_repository* repo, git_commit* commit,
                                     std::initializer_list<int> contexts) {
  for (int context : contexts) {
    for (int dt : {0, 1}) {
      DiffOptions options;
      options.context = context;
      options.dt = dt;
      options.abbrev = 7;
      EXPECT_EQ(FragmentOf(repo, commit, nullptr, options, "", FileDiffPath::kOwnRaw),
                FragmentOf(repo, commit, nullptr, options, "", FileDiffPath::kLibgit2))
          << git_commit_summary(commit) << " context=" << context << " dt=" << dt;
    }
  }
}

TEST(OwnPatches, FragmentEqualsLibgit2sXdiff) {
  TempDir dir;
  RepositoryPtr repo;
  const std::vector<CommitPtr> commits = FixtureCommits(dir, kHunkScript, "HEAD", &repo);
  ASSERT_EQ(commits.size(), 15u);
  size_t own = 0, renamed = 0, binary = 0;
  for (const auto& commit : commits) {
    const std::string subject = git_commit_summary(commit.get());
    {
      // The own patches are the ones the fragment writes: made for every file, libgit2's none.
      CommitFiles files;
      ASSERT_TRUE(OwnPatchFiles(repo.get(), commit.get(), &files));
      for (const FileDiff& f : files.files) {
        EXPECT_TRUE(f.own.made && !f.patch) << subject << ": " << f.delta.new_file.path;
        own += f.own.made;
        renamed += f.delta.status == GIT_DELTA_RENAMED;
        binary += f.own.binary;
      }
    }
    ExpectOwnFragmentsEqualLibgit2s(repo.get(), commit.get(), {3, 1, 2, 5, 40});
  }
  EXPECT_GE(own, 20u);
  EXPECT_EQ(renamed, 1u);
  EXPECT_EQ(binary, 2u);  // text to binary and back: NUL on either side
}

// The rawdiff and patch pages' diff text: the own tree diff's, libgit2's generic diff's and git's
// own `git diff` (no renames, git's defaults), byte for byte, for every commit against its first
// parent (or the empty tree): modes, binary files, submodules, symlinks, quoted names, empty files,
// missing final newlines, hunk headers under long lines.
TEST_F(TreeDiffFixture, DiffTextEqualsGitDiff) {
  const std::string git = "env HOME=" + ShellQuote(dir_.path()) +
                          " GIT_CONFIG_NOSYSTEM=1 git -C " + ShellQuote(bare_) +
                          " diff --no-renames --no-color --no-ext-diff ";
  for (const auto& commit : commits_) {
    std::string ours, theirs, reason;
    ASSERT_TRUE(
        AppendDiffText(repo_.get(), commit.get(), nullptr, 7, &ours, &reason, FileDiffPath::kOwn))
        << reason;
    ASSERT_TRUE(AppendDiffText(repo_.get(), commit.get(), nullptr, 7, &theirs, &reason,
                               FileDiffPath::kLibgit2))
        << reason;
    EXPECT_EQ(ours, theirs) << Subject(commit.get());
    const std::string id = OidHex(*git_commit_id(commit.get()));
    const std::string parent = git_commit_parentcount(commit.get()) > 0
                                   ? OidHex(*git_commit_parent_id(commit.get(), 0))
                                   : "4b825dc642cb6eb9a060e54bf8d69288fbee4904";  // empty tree
    EXPECT_EQ(ours, Shell(git + parent + " " + id)) << Subject(commit.get());
    EXPECT_FALSE(ours.empty()) << Subject(commit.get());
  }
}

// With the blobs packed (deltas of each other, as git repacks them), the own patches read each
// side from the pack reader (FileDiff::old_bytes/new_bytes: its bytes, not libgit2's copy) and
// the hunk headers search those bytes: the fragment equals libgit2's path, and the patch and
// rawdiff text libgit2's and `git diff`'s, on both fixtures.
TEST(OwnPatches, PackedBlobsEqualLibgit2sAndGit) {
  size_t from_packs = 0;
  for (const char* fixture : {kScript, kHunkScript}) {
    TempDir dir;
    RepositoryPtr repo;
    const std::string script = std::string(fixture) + "git repack -adfq --depth=50 --window=50\n";
    const std::vector<CommitPtr> commits = FixtureCommits(dir, script.c_str(), "--all", &repo);
    ASSERT_FALSE(commits.empty());
    ASSERT_FALSE(Shell("ls " + ShellQuote(dir.File("work/.git/objects/pack"))).empty());
    const std::string git = "env HOME=" + ShellQuote(dir.path()) +
                            " GIT_CONFIG_NOSYSTEM=1 git -C " + ShellQuote(dir.File("work/.git")) +
                            " diff --no-renames --no-color --no-ext-diff ";
    for (const auto& commit : commits) {
      const std::string subject = git_commit_summary(commit.get());
      CommitFiles files;
      ASSERT_TRUE(OwnPatchFiles(repo.get(), commit.get(), &files));
      for (const FileDiff& f : files.files) {
        if (!f.own.made) continue;
        // Every side the patch read came from the pack reader.
        EXPECT_EQ(static_cast<bool>(f.old_bytes), !git_oid_is_zero(&f.delta.old_file.id))
            << subject << ": " << f.delta.new_file.path;
        EXPECT_EQ(static_cast<bool>(f.new_bytes), !git_oid_is_zero(&f.delta.new_file.id))
            << subject << ": " << f.delta.new_file.path;
        EXPECT_EQ(f.old_blob, nullptr);
        from_packs += f.old_bytes && f.new_bytes;
      }
      // libgit2's patch of a kind change has no lines (FragmentEqualsTheLibgit2Path).
      if (!HasKindChange(files)) ExpectOwnFragmentsEqualLibgit2s(repo.get(), commit.get(), {3, 1});
      std::string ours, theirs, reason;
      ASSERT_TRUE(AppendDiffText(repo.get(), commit.get(), nullptr, 7, &ours, &reason,
                                 FileDiffPath::kOwnRaw))
          << reason;
      ASSERT_TRUE(AppendDiffText(repo.get(), commit.get(), nullptr, 7, &theirs, &reason,
                                 FileDiffPath::kLibgit2))
          << reason;
      EXPECT_EQ(ours, theirs) << subject;
      if (git_commit_parentcount(commit.get()) > 0) {
        EXPECT_EQ(ours, Shell(git + OidHex(*git_commit_parent_id(commit.get(), 0)) + " " +
                              OidHex(*git_commit_id(commit.get()))))
            << subject;
      }
    }
  }
  EXPECT_GE(from_packs, 20u);
}

TEST_F(TreeDiffFixture, DiffBetweenTwoCommitsAndPathLimits) {
  // id2 (any two commits, here the second root against master) and a path limit: the same bytes.
  const git_commit* master = commits_.front().get();
  for (const auto& other : commits_) {
    for (const char* path : {"", "a", "a/b/c/deep.txt"}) {
      DiffOptions options;
      options.abbrev = 7;
      CommitFiles files;
      std::string reason;
      ASSERT_TRUE(CommitFileDiffs(repo_.get(), const_cast<git_commit*>(master), other.get(),
                                  options, path, &files, &reason));
      if (HasKindChange(files)) continue;  // as above
      std::string ours, theirs;
      {
        Writer w(&ours);
        WriteDiffFragment(w, repo_.get(), const_cast<git_commit*>(master), other.get(), options,
                          path, FileDiffPath::kOwn);
      }
      {
        Writer w(&theirs);
        WriteDiffFragment(w, repo_.get(), const_cast<git_commit*>(master), other.get(), options,
                          path, FileDiffPath::kLibgit2);
      }
      EXPECT_EQ(ours, theirs) << Subject(other.get()) << " path=" << path;
    }
  }
}

// The changed files as CommitFileDiffs lists them `how` (no patches): status, paths, modes, ids.
std::string ListOf(git_repository* repo, git_commit* commit, git_commit* other,
                   std::string_view path, FileDiffPath how) {
  CommitFiles files;
  files.patches = false;
  std::string reason;
  if (!CommitFileDiffs(repo, commit, other, DiffOptions{}, path, &files, &reason, how))
    return "failed: " + reason;
  std::string list;
  for (const FileDiff& f : files.files)
    list += Describe(f.delta.status, f.delta.new_file.path, f.delta.old_file.mode,
                     f.delta.new_file.mode, f.delta.old_file.id, f.delta.new_file.id) +
            f.delta.old_file.path + "\n";
  return list;
}

// The log's way (kOwnRaw: trees read raw by id, a path's entries found from the roots) lists what
// the commit page's way lists (libgit2's trees; libgit2's pathspec for a path): every commit
// against its parent and against the second root, whole and limited to every file and folder the
// fixture has, to names that are prefixes of others, to a file replaced by a folder, to paths
// below a file or a submodule, and to paths libgit2 reads as patterns (left to it).
TEST_F(TreeDiffFixture, RawListsEqualTheLibgit2Trees) {
  const char* paths[] = {"",         "a",          "a/b",        "a/b/c",        "a/b/c/deep.txt",
                         "a/b/c/deep", "a-b",      "a.c",        "a/x",          "top.txt",
                         "top.txt/f", "sub",       "sub/x",      "link",         "doc.txt",
                         "n1",        "n1/n2",     "n1/n2/n3/f", "nonexistent",  "renamed-a-b",
                         "a/b/c/",    "a*",        "!a",         "#a",           "a ",
                         "d",         "only.txt",  "run.sh",     "bin.dat",      "."};
  git_commit* second_root = nullptr;
  for (const auto& c : commits_)
    if (Subject(c.get()) == "second root") second_root = c.get();
  ASSERT_NE(second_root, nullptr);
  size_t nonempty = 0;
  for (const auto& commit : commits_) {
    for (git_commit* other : {static_cast<git_commit*>(nullptr), second_root}) {
      for (const char* path : paths) {
        const std::string ours = ListOf(repo_.get(), commit.get(), other, path,
                                        FileDiffPath::kOwnRaw);
        EXPECT_EQ(ours, ListOf(repo_.get(), commit.get(), other, path, FileDiffPath::kOwn))
            << Subject(commit.get()) << " path=" << path << (other ? " against the second root" : "");
        nonempty += !ours.empty();
      }
    }
  }
  EXPECT_GT(nonempty, 100u);  // the comparison saw changes, not only empty lists
}

// Folders of many entries whose trees differ in a few: the raw way splits only the bytes between
// the two trees' common head and tail into entries (tree_diff.cc, ScanDiffering), so its lists
// must not depend on where those bytes fall. Names that are prefixes of others (f1, f10, f100, a
// folder f1x and a file f1x.c), the same blob under many names (identical id bytes, so a common
// tail that starts inside an entry), entries added, removed and changed at the start, the middle
// and the end, a folder turned file, and every commit against every other.
constexpr const char* kLongFolders = R"SH(
set -e
git init -q -b master work
cd work
mkdir -p d/f1x
for i in $(seq 1 150); do echo same > d/f$i; echo "$i" > t$i; done
echo x > d/f1x/in && echo y > d/f1x.c
git add -A && git commit -q -m 'root: 300 entries'
echo first > d/0 && git add -A && git commit -q -m 'add at the start'
echo changed > d/f75 && git commit -q -am 'change in the middle'
echo last > d/zz && git add -A && git commit -q -m 'add at the end'
git rm -q d/f1 d/f150 && git commit -q -m 'remove first and last of the same blobs'
echo same > d/f1 && echo same > d/f76a && git add -A && git commit -q -m 'same blob back and a new name'
git rm -q -r d/f1x && echo now-a-file > d/f1x && git add -A && git commit -q -m 'folder becomes a file'
echo 75 > t75 && echo other > t76 && echo other > t1 && git commit -q -am 'two ids swapped places'
git rm -q t10 && echo 10 > t10a && git add -A && git commit -q -m 'a name one byte longer, same blob'
echo same > d/f7 && echo changed > d/f8 && git commit -q -am 'one blob takes the next one'\''s'
)SH";

TEST(TreeDiffLongFolders, RawListsEqualTheLibgit2Trees) {
  TempDir dir;
  RepositoryPtr repo;
  const std::vector<CommitPtr> commits = FixtureCommits(dir, kLongFolders, "master", &repo);
  ASSERT_EQ(commits.size(), 10u);
  size_t nonempty = 0;
  for (const auto& a : commits) {
    for (const auto& b : commits) {
      for (const char* path : {"", "d"}) {
        const std::string ours = ListOf(repo.get(), a.get(), b.get(), path, FileDiffPath::kOwnRaw);
        EXPECT_EQ(ours, ListOf(repo.get(), a.get(), b.get(), path, FileDiffPath::kOwn))
            << git_commit_summary(a.get()) << " against " << git_commit_summary(b.get())
            << " path=" << path;
        nonempty += !ours.empty();
      }
    }
    const std::string ours = ListOf(repo.get(), a.get(), nullptr, "", FileDiffPath::kOwnRaw);
    EXPECT_EQ(ours, ListOf(repo.get(), a.get(), nullptr, "", FileDiffPath::kOwn))
        << git_commit_summary(a.get());
  }
  EXPECT_GT(nonempty, 150u);
}

TEST(TreeDiffPlainPath, OnlyPathsLibgit2MatchesLiterally) {
  for (const char* plain : {"a", "a/b.c", "dir/sub/file-1_2.txt", "caf\xc3\xa9", "a!", "x#y"})
    EXPECT_TRUE(PlainPath(plain)) << plain;
  for (const char* pattern : {"", "/a", "a/", "a//b", "!a", "#a", ".", "a b", "a\tb", "a*",
                              "a?", "a[b]", "a\\b", " a", "a\rb"})
    EXPECT_FALSE(PlainPath(pattern)) << pattern;
}

}  // namespace
}  // namespace shellac::gitfrag

namespace shellac::gitfrag {
namespace {

// The same comparison on the real repository SHELLAC_TREE_DIFF_REPO names, when one is
// (test::TreeDiffRepositorySample): every sampled commit of its HEAD, merges included, unified and
// side by side.
TEST(TreeDiffRealRepository, FragmentEqualsTheLibgit2Path) {
  const auto sample = test::TreeDiffRepositorySample();
  if (!sample) GTEST_SKIP() << "SHELLAC_TREE_DIFF_REPO not set";
  EnsureLibgit2();
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, sample->path.c_str()), 0);
  RepositoryPtr repo(raw);
  size_t commits = 0, own = 0;
  for (const std::string& id : sample->commits) {
    git_oid oid;
    ASSERT_EQ(git_oid_fromstr(&oid, id.c_str()), 0);
    git_commit* c = nullptr;
    ASSERT_EQ(git_commit_lookup(&c, repo.get(), &oid), 0);
    CommitPtr commit(c);
    ++commits;
    // The log's raw way lists the same files, whole and limited to a changed file and its folder.
    EXPECT_EQ(ListOf(repo.get(), commit.get(), nullptr, "", FileDiffPath::kOwnRaw),
              ListOf(repo.get(), commit.get(), nullptr, "", FileDiffPath::kOwn))
        << id;
    {
      CommitFiles files;
      files.patches = false;
      std::string reason;
      ASSERT_TRUE(CommitFileDiffs(repo.get(), commit.get(), nullptr, DiffOptions{}, "", &files,
                                  &reason));
      if (!files.files.empty()) {
        const std::string file = files.files.front().delta.new_file.path;
        const size_t slash = file.rfind('/');
        for (const std::string& path :
             {file, slash == std::string::npos ? file : file.substr(0, slash)})
          EXPECT_EQ(ListOf(repo.get(), commit.get(), nullptr, path, FileDiffPath::kOwnRaw),
                    ListOf(repo.get(), commit.get(), nullptr, path, FileDiffPath::kOwn))
              << id << " path=" << path;
      }
    }
    for (int dt : {0, 1}) {
      DiffOptions options;
      options.dt = dt;
      options.abbrev = 10;
      std::string ours, theirs;
      bool used_own = false;
      {
        CommitFiles files;
        std::string reason;
        ASSERT_TRUE(CommitFileDiffs(repo.get(), commit.get(), nullptr, options, "", &files, &reason,
                                    FileDiffPath::kOwn, &used_own));
        if (HasKindChange(files)) continue;  // libgit2 shows no lines for one (above)
      }
      own += used_own && dt == 0;
      {
        Writer w(&ours);
        WriteDiffFragment(w, repo.get(), commit.get(), nullptr, options, "", FileDiffPath::kOwn);
      }
      {
        Writer w(&theirs);
        WriteDiffFragment(w, repo.get(), commit.get(), nullptr, options, "",
                          FileDiffPath::kLibgit2);
      }
      EXPECT_EQ(ours, theirs) << id << " dt=" << dt;
    }
  }
  std::cout << "[ compared ] " << commits << " commits, " << own << " by the own tree diff\n";
  EXPECT_GT(commits, 0u);
}

}  // namespace
}  // namespace shellac::gitfrag
