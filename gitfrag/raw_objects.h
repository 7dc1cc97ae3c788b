// Objects read raw from a repository's object database backends (packs, loose objects), without
// libgit2's parse or its object cache: for walks that visit tens of thousands of commits and
// trees (blame, a path's log) and want of each tree only the entry on one path. A tree's entry
// for a name never changes, so it is remembered process-wide (memo.h).
#pragma once

#include <git2.h>
#include <git2/sys/odb_backend.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gitfrag/git.h"
#include "gitfrag/pack_reader.h"

namespace shellac::gitfrag {

// A name's entry in one tree (present false: no such name).
struct TreeEntry {
  bool present = false;
  uint32_t mode = 0;
  git_oid id{};
};

// A tree entry's mode as git reads it (canon_mode): one of the five modes git writes, whatever an
// old or odd tree holds: a regular file is 100755 when its owner's execute bit is set and 100644
// otherwise (old git wrote 100664 and 100775), a symlink 120000, a folder 040000, anything else a
// submodule's 160000. git's diffs, listings and archives show it, and two entries whose modes are
// the same once canonical are no change to git. (libgit2's git_tree_entry_filemode and its diff
// differ: a symlink with an execute bit is 100755 there, and its diff reports 100664 -> 100644.)
uint32_t CanonicalMode(uint32_t mode);

// An object's bytes: as the pack reader (pack_reader.h) gave them (shared with its cache), or as
// an object database backend gave them (freed with that backend's call).
class BackendObject {
 public:
  BackendObject() = default;
  explicit BackendObject(ObjectBytes packed)
      : packed_(std::move(packed)), data_(packed_.view().data()), size_(packed_.size()) {}
  BackendObject(git_odb_backend* backend, void* data, size_t size)
      : backend_(backend), data_(data), size_(size) {}
  BackendObject(BackendObject&& o) noexcept
      : packed_(std::move(o.packed_)),
        backend_(o.backend_),
        data_(std::exchange(o.data_, nullptr)),
        size_(o.size_) {}
  BackendObject& operator=(BackendObject&& o) noexcept {
    std::swap(packed_, o.packed_);
    std::swap(backend_, o.backend_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~BackendObject() {
    if (data_ != nullptr && !packed_) git_odb_backend_data_free(backend_, const_cast<void*>(data_));
  }
  explicit operator bool() const { return data_ != nullptr; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  ObjectBytes packed_;
  git_odb_backend* backend_ = nullptr;
  const void* data_ = nullptr;
  size_t size_ = 0;
};

// What pages show of a commit, as libgit2 parses it (git_commit_author, _committer,
// _parentcount, _message_raw, _message_encoding): views into the commit's bytes.
struct CommitFields {
  std::string_view author_name, author_email, message;
  int64_t author_time = 0, committer_time = 0;
  unsigned parents = 0;
  std::optional<std::string> encoding;  // none: no encoding header
};

// `raw`, a commit object's bytes (RawObjects::Read), read as libgit2 reads them when the commit has
// the plain shape git writes: "tree", "parent"s, one "author" and a "committer" of the shape
// "NAME <EMAIL> SECONDS ZONE" (one '<', one '>'), other headers with at most one "encoding", a
// blank line, the message; no NUL byte (libgit2's strings end at one). False for anything else:
// let libgit2 read that commit (FieldsOf), so its odd cases stay libgit2's.
bool ParsePlainCommit(std::string_view raw, CommitFields* out);
// The same fields of a commit libgit2 read (views into it: it must outlive them).
CommitFields FieldsOf(const git_commit* commit);

// One thread's reader for one repository. An object that cannot be read (a shallow or broken
// repository) makes it incomplete(): what its user found may differ from a whole history's.
class RawObjects {
 public:
  explicit RawObjects(git_repository* repo);
  git_repository* repo() const { return repo_; }

  // The object `id` of `type` from the pack reader (pack_reader.h), else from the first backend
  // that has it, else through git_odb_read (which looks for new packs first); empty (and
  // incomplete()) when it cannot be read.
  BackendObject Read(const git_oid& id, git_object_t type);

  // The entry named `name` in tree `tree` (remembered process-wide; an unreadable tree is not).
  TreeEntry Entry(const git_oid& tree, std::string_view name);

  // The entry for `path` under the root tree `root` as git_tree_entry_bypath finds it: every
  // folder on the way a tree; a path ending in '/' names a folder.
  TreeEntry PathEntry(const git_oid& root, std::string_view path);

  bool incomplete() const { return incomplete_; }
  void set_incomplete() { incomplete_ = true; }

 private:
  git_repository* repo_;
  OdbPtr odb_;
  bool incomplete_ = false;
};

}  // namespace shellac::gitfrag
