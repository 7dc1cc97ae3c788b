// Owning wrappers for libgit2 handles: each handle is wrapped the moment it is created, so no
// page code ever calls a *_free function.
#pragma once

#include <git2.h>

#include <memory>

namespace shellac::gitfrag {

template <typename T, void (*Free)(T*)>
struct GitDeleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using GitPtr = std::unique_ptr<T, GitDeleter<T, Free>>;

using RepositoryPtr = GitPtr<git_repository, git_repository_free>;
using ObjectPtr = GitPtr<git_object, git_object_free>;
using CommitPtr = GitPtr<git_commit, git_commit_free>;
using TreePtr = GitPtr<git_tree, git_tree_free>;
using BlobPtr = GitPtr<git_blob, git_blob_free>;
using DiffPtr = GitPtr<git_diff, git_diff_free>;
using PatchPtr = GitPtr<git_patch, git_patch_free>;
using RevwalkPtr = GitPtr<git_revwalk, git_revwalk_free>;
using OdbPtr = GitPtr<git_odb, git_odb_free>;
using ReferencePtr = GitPtr<git_reference, git_reference_free>;

// libgit2's process-wide state; constructed once by the first Site.
void EnsureLibgit2();

}  // namespace shellac::gitfrag
