#include "gitfrag/tree_diff.h"

#include <cstring>

#include "gitfrag/git.h"
#include "gitfrag/raw_objects.h"

namespace shellac::gitfrag {
namespace {

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kTree = 0040000;

bool IsTree(uint32_t mode) {
  return (mode & kTypeMask) == kTree;
}

uint32_t ModeOf(const git_tree_entry* e) {
  return CanonicalMode(git_tree_entry_filemode_raw(e));
}

// git's tree order: names compared bytewise, a folder's name as if it ended in '/'.
int CompareEntries(const git_tree_entry* a, const git_tree_entry* b) {
  const char* an = git_tree_entry_name(a);
  const char* bn = git_tree_entry_name(b);
  const size_t al = std::strlen(an), bl = std::strlen(bn);
  const size_t common = al < bl ? al : bl;
  if (const int c = std::memcmp(an, bn, common); c != 0) return c;
  const unsigned char ac = common < al ? static_cast<unsigned char>(an[common])
                                       : (IsTree(ModeOf(a)) ? '/' : '\0');
  const unsigned char bc = common < bl ? static_cast<unsigned char>(bn[common])
                                       : (IsTree(ModeOf(b)) ? '/' : '\0');
  return ac < bc ? -1 : ac > bc ? 1 : 0;
}

class Walker {
 public:
  Walker(git_repository* repo, std::vector<TreeChange>* out, std::string* reason)
      : repo_(repo), out_(out), reason_(reason) {}

  // Both trees' entries in order; either tree may be null (no side).
  bool Walk(const git_tree* a, const git_tree* b) {
    const size_t na = a != nullptr ? git_tree_entrycount(a) : 0;
    const size_t nb = b != nullptr ? git_tree_entrycount(b) : 0;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
      const git_tree_entry* ea = i < na ? git_tree_entry_byindex(a, i) : nullptr;
      const git_tree_entry* eb = j < nb ? git_tree_entry_byindex(b, j) : nullptr;
      const int c = ea == nullptr ? 1 : eb == nullptr ? -1 : CompareEntries(ea, eb);
      if (c < 0) {
        if (!Whole(GIT_DELTA_DELETED, ea)) return false;
        ++i;
        continue;
      }
      if (c > 0) {
        if (!Whole(GIT_DELTA_ADDED, eb)) return false;
        ++j;
        continue;
      }
      ++i, ++j;
      const uint32_t ma = ModeOf(ea), mb = ModeOf(eb);
      if (ma == mb && git_oid_equal(git_tree_entry_id(ea), git_tree_entry_id(eb))) continue;
      if (IsTree(ma)) {  // both folders (the order puts a folder and a file apart)
        if (!Descend(ea, eb)) return false;
      } else {
        // git's diff-tree pairs a file, symlink or submodule with whatever non-folder takes its
        // name: one change, 'T' when the kind differs.
        Leaf((ma & kTypeMask) == (mb & kTypeMask) ? GIT_DELTA_MODIFIED : GIT_DELTA_TYPECHANGE, ea,
             eb);
      }
    }
    return true;
  }

 private:
  // An entry only one side has: a file, or every file under a folder.
  bool Whole(git_delta_t status, const git_tree_entry* e) {
    if (!IsTree(ModeOf(e))) {
      if (status == GIT_DELTA_ADDED)
        Leaf(status, nullptr, e);
      else
        Leaf(status, e, nullptr);
      return true;
    }
    return status == GIT_DELTA_ADDED ? Descend(nullptr, e) : Descend(e, nullptr);
  }

  bool Descend(const git_tree_entry* ea, const git_tree_entry* eb) {
    TreePtr ta, tb;
    if (ea != nullptr && !Lookup(ea, &ta)) return false;
    if (eb != nullptr && !Lookup(eb, &tb)) return false;
    const size_t length = prefix_.size();
    prefix_.append(git_tree_entry_name(ea != nullptr ? ea : eb)).push_back('/');
    const bool ok = Walk(ta.get(), tb.get());
    prefix_.resize(length);
    return ok;
  }

  bool Lookup(const git_tree_entry* e, TreePtr* tree) {
    git_tree* raw = nullptr;
    if (git_tree_lookup(&raw, repo_, git_tree_entry_id(e)) != 0) {
      const git_error* err = git_error_last();
      *reason_ = "cannot read tree " + prefix_ + git_tree_entry_name(e) + ": " +
                 (err != nullptr ? err->message : "unknown error");
      return false;
    }
    tree->reset(raw);
    return true;
  }

  void Leaf(git_delta_t status, const git_tree_entry* ea, const git_tree_entry* eb) {
    TreeChange& c = out_->emplace_back();
    c.status = status;
    c.path = prefix_;
    c.path.append(git_tree_entry_name(ea != nullptr ? ea : eb));
    if (ea != nullptr) {
      c.old_mode = ModeOf(ea);
      git_oid_cpy(&c.old_id, git_tree_entry_id(ea));
    }
    if (eb != nullptr) {
      c.new_mode = ModeOf(eb);
      git_oid_cpy(&c.new_id, git_tree_entry_id(eb));
    }
  }

  git_repository* repo_;
  std::vector<TreeChange>* out_;
  std::string* reason_;
  std::string prefix_;
};

}  // namespace

bool DiffTrees(git_repository* repo, git_tree* old_tree, git_tree* new_tree,
               std::vector<TreeChange>* out, std::string* reason) {
  return Walker(repo, out, reason).Walk(old_tree, new_tree);
}

}  // namespace shellac::gitfrag
