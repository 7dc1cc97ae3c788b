// The files that differ between two trees, read entry by entry: a subtree whose id is the same on
// both sides is skipped without being read. The changes are the ones libgit2's tree-to-tree diff
// reports with GIT_DIFF_INCLUDE_TYPECHANGE and without rename detection, in the same (git's) order;
// the diff fragment uses them to diff each file's blobs directly (render.cc, CommitFileDiffs).
#pragma once

#include <git2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gitfrag/raw_objects.h"

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
// False with *reason when a tree cannot be read. Subtrees are read through libgit2
// (git_tree_lookup: its object cache keeps them).
bool DiffTrees(git_repository* repo, git_tree* old_tree, git_tree* new_tree,
               std::vector<TreeChange>* out, std::string* reason);

// The same for trees given by id (null: none), each read raw through `objects` (the render
// thread's pack reader, else libgit2's backends: no parse, nothing kept in libgit2's cache) and
// its entries scanned in place. A tree the scan does not take as libgit2's parser would (a mode
// of more than six digits, say) is read through git_tree_lookup instead, so what is listed and
// what fails are libgit2's.
bool DiffTreeIds(git_repository* repo, RawObjects* objects, const git_oid* old_tree,
                 const git_oid* new_tree, std::vector<TreeChange>* out, std::string* reason);

// Whether DiffTreePath takes `path`: libgit2 reads a pathspec as a pattern even when told to match
// it literally (a leading '!' negates it, blanks are trimmed, a backslash escapes, a wildcard stops
// it from naming a folder), so only a path without any of those bytes (nor bytes below 0x21, an
// empty segment, a leading or trailing '/') is one whose matches are plain: the file `path` and
// the files under the folder `path`.
bool PlainPath(std::string_view path);

// DiffTreeIds limited to the plain `path` (PlainPath): the changes libgit2's tree diff with that
// pathspec lists (render.cc's PathChanges), found from the path's entry in each root
// (RawObjects::PathEntry, remembered by tree). False when a tree on the way cannot be read
// (objects->incomplete()) or a subtree below the path cannot be read (*reason).
bool DiffTreePath(git_repository* repo, RawObjects* objects, const git_oid* old_tree,
                  const git_oid* new_tree, std::string_view path, std::vector<TreeChange>* out,
                  std::string* reason);

}  // namespace shellac::gitfrag
