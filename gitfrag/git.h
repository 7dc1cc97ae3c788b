// Owning wrappers for libgit2 handles (base::Owned): each handle is wrapped the moment it is created, so no
// page code ever calls a *_free function.
#pragma once

#include <git2.h>

#include <memory>

#include "base/owned.h"

namespace shellac::gitfrag {

using RepositoryPtr = base::Owned<git_repository_free>;
using ObjectPtr = base::Owned<git_object_free>;
using CommitPtr = base::Owned<git_commit_free>;
using TreePtr = base::Owned<git_tree_free>;
using BlobPtr = base::Owned<git_blob_free>;
using DiffPtr = base::Owned<git_diff_free>;
using PatchPtr = base::Owned<git_patch_free>;
using RevwalkPtr = base::Owned<git_revwalk_free>;
using OdbPtr = base::Owned<git_odb_free>;
using OdbObjectPtr = base::Owned<git_odb_object_free>;
using ReferencePtr = base::Owned<git_reference_free>;
using TreeEntryPtr = base::Owned<git_tree_entry_free>;
using ConfigPtr = base::Owned<git_config_free>;

// libgit2's process-wide state; constructed once by the first Site.
void EnsureLibgit2();

}  // namespace shellac::gitfrag
