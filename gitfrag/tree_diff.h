// The files that differ between two trees, read entry by entry: a subtree whose id is the same on
// both sides is skipped without being read. The changes are the ones libgit2's tree-to-tree diff
// reports with GIT_DIFF_INCLUDE_TYPECHANGE and without rename detection, in the same (git's) order;
// the diff fragment uses them to diff each file's blobs directly (render.cc, CommitFileDiffs).
#pragma once

#include <git2.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shellac::gitfrag {

struct TreeChange {
  git_delta_t status = GIT_DELTA_MODIFIED;  // GIT_DELTA_ADDED, _DELETED, _MODIFIED or _TYPECHANGE
  std::string path;                         // from the root, '/'-separated
  uint32_t old_mode = 0, new_mode = 0;      // the tree entries' canonical modes (0: no side)
  git_oid old_id{}, new_id{};               // zero: no side
  // Set by rename detection (renames.h) on a GIT_DELTA_RENAMED change: the deleted file's path
  // and git's similarity score (0-60000).
  std::string old_path;
  int score = 0;
};

// Appends to *out the files that differ between `old_tree` (null: the empty tree, as for a root
// commit) and `new_tree`, ordered by path as git orders tree entries (a folder as its name and
// '/'). Modes are compared canonical (CanonicalMode), as git compares them: an entry whose mode
// changed from 100664 to 100644 with the same blob is no change (libgit2's diff reports one). A
// path whose kind changes between file, symlink and submodule is one
// GIT_DELTA_TYPECHANGE change with both sides (git diff-tree's 'T'); between a folder and anything
// else, the folder's files are deleted or added and the other entry added or deleted, as git's.
// False with *reason when a tree cannot be read.
bool DiffTrees(git_repository* repo, git_tree* old_tree, git_tree* new_tree,
               std::vector<TreeChange>* out, std::string* reason);

}  // namespace shellac::gitfrag
