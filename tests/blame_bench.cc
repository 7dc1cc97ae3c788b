// blame_bench: times gitfrag's Blame on a repository, outside any page.
//
//   blame_bench [--ignore-memo] [--lines] [--seconds N] REPO PATH REV...
//
// Blames PATH at each REV in turn, in one process (so a later REV may find an earlier blame
// remembered, as a crawler's later page would), and prints per REV the seconds, the commits the
// blame was passed through and the entries. --ignore-memo works every blame out in full;
// --lines prints each line's commit, line in that commit and final line (1-based), as the first
// three fields of `git blame --porcelain`'s line headers; --seconds stops each blame after N
// seconds (600), as blame-timeout does (for a profile of a part of a long blame).
#include <git2.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gitfrag/blame.h"
#include "gitfrag/git.h"

using namespace shellac::gitfrag;

int main(int argc, char** argv) {
  BlameMemo memo = BlameMemo::kUse;
  bool lines = false;
  int seconds_limit = 600;
  int arg = 1;
  for (; arg < argc && std::strncmp(argv[arg], "--", 2) == 0; ++arg) {
    if (std::strcmp(argv[arg], "--ignore-memo") == 0) memo = BlameMemo::kIgnore;
    else if (std::strcmp(argv[arg], "--lines") == 0) lines = true;
    else if (std::strcmp(argv[arg], "--seconds") == 0 && arg + 1 < argc) seconds_limit = std::atoi(argv[++arg]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[arg]);
      return 2;
    }
  }
  if (argc - arg < 3) {
    std::fprintf(stderr, "usage: blame_bench [--ignore-memo] [--lines] REPO PATH REV...\n");
    return 2;
  }
  EnsureLibgit2();
  // BLAME_BENCH_CACHE_MB: libgit2's object cache limit (256 MiB by default), for experiments.
  if (const char* mb = std::getenv("BLAME_BENCH_CACHE_MB"))
    git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, static_cast<ssize_t>(std::atoll(mb)) << 20);
  git_repository* raw_repo = nullptr;
  if (git_repository_open(&raw_repo, argv[arg]) != 0) {
    std::fprintf(stderr, "cannot open %s\n", argv[arg]);
    return 1;
  }
  const RepositoryPtr repo(raw_repo);
  const std::string path = argv[arg + 1];
  for (int i = arg + 2; i < argc; ++i) {
    git_object* raw_object = nullptr;
    if (git_revparse_single(&raw_object, repo.get(), argv[i]) != 0) {
      std::fprintf(stderr, "no revision %s\n", argv[i]);
      return 1;
    }
    const ObjectPtr object(raw_object);
    git_commit* raw_commit = nullptr;
    if (git_commit_lookup(&raw_commit, repo.get(), git_object_id(object.get())) != 0) return 1;
    const CommitPtr commit(raw_commit);
    git_tree* raw_tree = nullptr;
    if (git_commit_tree(&raw_tree, commit.get()) != 0) return 1;
    const TreePtr tree(raw_tree);
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) != 0) {
      std::fprintf(stderr, "no %s at %s\n", path.c_str(), argv[i]);
      return 1;
    }
    const TreeEntryPtr entry(raw_entry);
    const auto t0 = std::chrono::steady_clock::now();
    const BlameResult result = Blame(repo.get(), *git_commit_id(commit.get()), path,
                                     *git_tree_entry_id(entry.get()),
                                     t0 + std::chrono::seconds(seconds_limit), memo);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (result.status == BlameResult::Status::kDeadline) {
      std::printf("%s %s stopped after %.3f s\n", argv[i], path.c_str(), seconds);
      continue;
    }
    if (result.status != BlameResult::Status::kOk) {
      std::fprintf(stderr, "blame failed: %s\n", result.error.c_str());
      return 1;
    }
    std::printf("%s %s %.3f s, %zu commits, %zu entries\n", argv[i], path.c_str(), seconds,
                result.commits, result.entries.size());
    if (lines) {
      for (const BlameEntry& e : result.entries) {
        char hex[GIT_OID_HEXSZ + 1];
        git_oid_tostr(hex, sizeof hex, &e.commit);
        for (size_t k = 0; k < e.num_lines; ++k)
          std::printf("%s %zu %zu\n", hex, e.s_lno + k + 1, e.lno + k + 1);
      }
    }
  }
  return 0;
}
