// RefIndex: commit id -> the ref names that decorate it, read from packed-refs and the loose
// files under refs/ directly. A packed annotated tag is recognised by its "^" peeled line, so no
// tag object is inflated and the object store is never asked for a type. The one exception is a
// loose tag ref (or a packed-refs file written without the "peeled" trait): git records no peeled
// target for it, so `peel` is called once for that ref when the index is built (never per request).
#pragma once

#include <git2.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gitfrag/memo.h"

namespace shellac::gitfrag {

struct Decoration {
  enum class Kind { kHead, kBranch, kTag, kAnnotatedTag, kRemote, kOther };
  Kind kind;
  std::string_view name;  // full ref name ("refs/tags/v1", "HEAD"), owned by the RefIndex
};

class RefIndex {
 public:
  RefIndex() = default;
  RefIndex(const RefIndex&) = delete;  // decorations view into its own storage
  RefIndex& operator=(const RefIndex&) = delete;

  // The object a tag-like ref finally points at, and whether the ref's own object was a tag.
  struct Peeled {
    git_oid target;
    bool annotated;
  };
  using Peeler = std::function<std::optional<Peeled>(const git_oid&)>;

  // Reads `git_dir`'s HEAD, packed-refs and refs/. Missing files mean no refs.
  static std::shared_ptr<const RefIndex> Build(const std::string& git_dir, const Peeler& peel);

  // Decorations of `commit` in git's order (HEAD first, then refs in reverse name order); empty
  // when none.
  std::span<const Decoration> For(const git_oid& commit) const;

  const std::vector<std::string>& branches() const { return branches_; }  // short names, sorted
  const std::string& head_branch() const { return head_branch_; }  // "" when HEAD is detached
  // The commit a branch (short name) points at, if it exists.
  std::optional<git_oid> Branch(const std::string& short_name) const;
  size_t peel_calls() const { return peel_calls_; }  // objects read to build this index

  // Every ref under refs/ in name order (git's), a symbolic one resolved to its target's id.
  struct Ref {
    std::string_view name;          // "refs/tags/v1.0", owned by the RefIndex
    git_oid id;                     // the object the ref names
    bool peel_known = false;        // packed-refs recorded whether it peels (its "peeled" traits)
    std::optional<git_oid> peeled;  // with peel_known: the object a tag finally points at
  };
  const std::vector<Ref>& refs() const { return refs_; }

  // A number no other index of this process has: what is derived from the refs (info/refs) can be
  // kept under it, and stays current exactly as long as this index does.
  uint64_t generation() const { return generation_; }
  // info/refs' text (ui_clone.cc) for these refs: `make` runs once per index, for its first caller
  // (callers at the same time wait for it), and the text is kept with the index. It also says
  // which of the refs' objects existed then: a ref whose object is missing stays left out until
  // the refs change.
  const std::string& InfoRefs(const std::function<std::string()>& make) const;

 private:
  struct Pending {  // a decoration and the commit it decorates
    git_oid target;
    Decoration decoration;
  };
  // Groups `pending` (in the order git makes them) by target: fills decorations_, groups_, slots_.
  void GroupByCommit(const std::vector<Pending>& pending);

  std::string packed_;                   // the packed-refs file, which decoration names view
  std::deque<std::string> loose_names_;  // names of loose refs and symbolic targets
  // Decorations grouped by the commit they decorate, each group contiguous in git's order; found
  // through an open-addressing table (built with no allocation per ref: thousands of refs on a
  // large repository, and a fork farm builds one index per fork).
  struct Group {
    git_oid commit;
    uint32_t begin = 0;  // into decorations_
    uint32_t count = 0;
  };
  std::vector<Decoration> decorations_;
  std::vector<Group> groups_;
  std::vector<uint32_t> slots_;  // group index + 1; 0: empty. A power of two in size.
  std::unordered_map<std::string, git_oid> branch_tips_;
  std::vector<std::string> branches_;
  std::vector<Ref> refs_;
  std::string head_branch_;
  size_t peel_calls_ = 0;
  uint64_t generation_ = 0;
  mutable std::once_flag info_refs_once_;
  mutable std::string info_refs_;
};

// Appends a file's identity (inode, size, modification time; "-" when it does not exist) to *out,
// as RefsFingerprint does for each of its files. Whether it exists.
bool AddFileFingerprint(const std::string& path, std::string* out);

// A cheap fingerprint of everything a RefIndex is built from (sizes, inodes and modification
// times of HEAD, packed-refs and every folder under refs/). Equal fingerprints: same refs.
std::string RefsFingerprint(const std::string& git_dir);

}  // namespace shellac::gitfrag
