#include "gitfrag/tree_diff.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "gitfrag/git.h"

namespace shellac::gitfrag {
namespace {

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kTree = 0040000;

bool IsTree(uint32_t mode) {
  return (mode & kTypeMask) == kTree;
}

// A tree entry as the walk compares it.
struct Entry {
  uint32_t mode = 0;  // canonical (CanonicalMode)
  std::string_view name;
  const unsigned char* id = nullptr;  // GIT_OID_RAWSZ bytes
};

// One tree's entries in the object's order (git's), and what holds the bytes they point into.
struct Tree {
  std::vector<Entry> entries;
  BackendObject raw;  // read raw
  TreePtr parsed;     // or read through libgit2
};

void EntriesOf(const git_tree* tree, std::vector<Entry>* out) {
  const size_t n = git_tree_entrycount(tree);
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree, i);
    out->push_back(Entry{CanonicalMode(git_tree_entry_filemode_raw(e)), git_tree_entry_name(e),
                         git_tree_entry_id(e)->id});
  }
}

// The raw tree entry at `p` ("MODE NAME\0" and the id's bytes) into *e and the byte after it, where
// libgit2's parser (git_tree__parse_raw) would read the same: null for anything else git does not
// write (a mode of more than six octal digits or over 0xFFFF, no space after it, an empty or
// unterminated name or one over 65,535 bytes, a short id), which is then left to that parser.
const char* NextEntry(const char* p, const char* end, Entry* e) {
  uint32_t mode = 0;
  const char* m = p;
  while (m < end && m - p < 6 && *m >= '0' && *m <= '7') mode = mode * 8 + (*m++ - '0');
  if (m == p || m == end || *m != ' ' || mode > 0xFFFF) return nullptr;
  const char* const name = m + 1;
  const auto* nul = static_cast<const char*>(std::memchr(name, '\0', end - name));
  if (nul == nullptr || nul == name || nul - name > 0xFFFF || end - nul - 1 < GIT_OID_RAWSZ)
    return nullptr;
  *e = Entry{CanonicalMode(mode), std::string_view(name, nul - name),
             reinterpret_cast<const unsigned char*>(nul + 1)};
  return nul + 1 + GIT_OID_RAWSZ;
}

// A raw tree's entries (NextEntry each): false when one is not what git writes.
bool ScanEntries(std::string_view raw, std::vector<Entry>* out) {
  const char* p = raw.data();
  const char* const end = p + raw.size();
  while (p < end) {
    Entry e;
    p = NextEntry(p, end, &e);
    if (p == nullptr) return false;
    out->push_back(e);
  }
  return true;
}

// How many bytes `a` and `b` begin with alike, compared a word at a time.
size_t CommonHead(std::string_view a, std::string_view b) {
  const size_t shorter = std::min(a.size(), b.size());
  size_t n = 0;
  for (; n + 8 <= shorter; n += 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + n, 8);
    std::memcpy(&y, b.data() + n, 8);
    if (x != y) break;
  }
  while (n < shorter && a[n] == b[n]) ++n;
  return n;
}

// How many bytes `a` and `b` end with alike.
size_t CommonTail(std::string_view a, std::string_view b) {
  const size_t shorter = std::min(a.size(), b.size());
  const char* const a_end = a.data() + a.size();
  const char* const b_end = b.data() + b.size();
  size_t n = 0;
  for (; n + 8 <= shorter; n += 8) {
    uint64_t x, y;
    std::memcpy(&x, a_end - n - 8, 8);
    std::memcpy(&y, b_end - n - 8, 8);
    if (x != y) break;
  }
  while (n < shorter && a_end[-1 - static_cast<std::ptrdiff_t>(n)] ==
                            b_end[-1 - static_cast<std::ptrdiff_t>(n)])
    ++n;
  return n;
}

// Two raw trees' entries where their bytes differ: the entries both begin with (byte-identical,
// so equal) and both end with are left out, as the walk would pass over them as unchanged.
// Trees that change one file in a folder of hundreds differ in one entry, and only the bytes
// between the common head and tail are split into entries on both sides; the rest of `a` is
// still scanned (no entries kept) so that a tree ScanEntries refuses is refused here too (false:
// the caller scans both whole). In git's order (a tree out of order, which git never writes,
// may pair differently from the whole lists).
bool ScanDiffering(std::string_view a, std::string_view b, std::vector<Entry>* ea,
                   std::vector<Entry>* eb) {
  const size_t head = CommonHead(a, b), tail = CommonTail(a, b);
  const char* const a_end = a.data() + a.size();
  const char* const b_end = b.data() + b.size();
  // The entries that end within the common head: the same on both sides.
  const char* i = a.data();
  Entry e;
  while (i < a_end) {
    const char* next = NextEntry(i, a_end, &e);
    if (next == nullptr) return false;
    if (static_cast<size_t>(next - a.data()) > head) break;
    i = next;
  }
  const char* j = b.data() + (i - a.data());
  // Each side split in turn, the one with more bytes left first, until both are at an entry's
  // start with as many bytes left, and those bytes are within the common tail.
  while (true) {
    const size_t left_a = static_cast<size_t>(a_end - i), left_b = static_cast<size_t>(b_end - j);
    if (left_a == left_b && left_a <= tail) break;
    if (left_a >= left_b) {
      i = NextEntry(i, a_end, &e);
      if (i == nullptr) return false;
      ea->push_back(e);
    }
    if (left_b >= left_a) {
      j = NextEntry(j, b_end, &e);
      if (j == nullptr) return false;
      eb->push_back(e);
    }
  }
  while (i < a_end) {
    i = NextEntry(i, a_end, &e);
    if (i == nullptr) return false;
  }
  return true;
}

// git's tree order: names compared bytewise, a folder's name as if it ended in '/'.
int CompareEntries(const Entry& a, const Entry& b) {
  const size_t common = std::min(a.name.size(), b.name.size());
  if (const int c = std::memcmp(a.name.data(), b.name.data(), common); c != 0) return c;
  const unsigned char ac = common < a.name.size() ? static_cast<unsigned char>(a.name[common])
                                                  : (IsTree(a.mode) ? '/' : '\0');
  const unsigned char bc = common < b.name.size() ? static_cast<unsigned char>(b.name[common])
                                                  : (IsTree(b.mode) ? '/' : '\0');
  return ac < bc ? -1 : ac > bc ? 1 : 0;
}

git_oid IdOf(const Entry& e) {
  git_oid id;
  std::memcpy(id.id, e.id, GIT_OID_RAWSZ);
  return id;
}

class Walker {
 public:
  // `objects` null: subtrees read through git_tree_lookup; else raw through it.
  Walker(git_repository* repo, RawObjects* objects, std::vector<TreeChange>* out,
         std::string* reason, std::string_view prefix = {})
      : repo_(repo), objects_(objects), out_(out), reason_(reason), prefix_(prefix) {}

  // Both trees' entries in order; either tree may be null (no side).
  bool Walk(const Tree* a, const Tree* b) {
    const size_t na = a != nullptr ? a->entries.size() : 0;
    const size_t nb = b != nullptr ? b->entries.size() : 0;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
      const Entry* ea = i < na ? &a->entries[i] : nullptr;
      const Entry* eb = j < nb ? &b->entries[j] : nullptr;
      const int c = ea == nullptr ? 1 : eb == nullptr ? -1 : CompareEntries(*ea, *eb);
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
      if (ea->mode == eb->mode && std::memcmp(ea->id, eb->id, GIT_OID_RAWSZ) == 0) continue;
      if (IsTree(ea->mode)) {  // both folders (the order puts a folder and a file apart)
        if (!Descend(ea, eb)) return false;
      } else {
        // git's diff-tree pairs a file, symlink or submodule with whatever non-folder takes its
        // name: one change, 'T' when the kind differs.
        Leaf((ea->mode & kTypeMask) == (eb->mode & kTypeMask) ? GIT_DELTA_MODIFIED
                                                              : GIT_DELTA_TYPECHANGE,
             ea, eb);
      }
    }
    return true;
  }

  // Trees `a` and `b` into *ta and *tb: read raw, only the entries where their bytes differ
  // (ScanDiffering); else each whole (Load, named `name_a` and `name_b`).
  bool LoadPair(const git_oid& a, const git_oid& b, std::string_view name_a,
                std::string_view name_b, Tree* ta, Tree* tb) {
    if (objects_ != nullptr) {
      ta->raw = objects_->Read(a, GIT_OBJECT_TREE);
      tb->raw = ta->raw ? objects_->Read(b, GIT_OBJECT_TREE) : BackendObject();
      if (ta->raw && tb->raw &&
          ScanDiffering(ta->raw.bytes(), tb->raw.bytes(), &ta->entries, &tb->entries))
        return true;
      ta->entries.clear();
      tb->entries.clear();
    }
    return Load(a, name_a, ta) && Load(b, name_b, tb);
  }

  // Tree `id` (named `name` under the prefix, for the reason) into *tree.
  bool Load(const git_oid& id, std::string_view name, Tree* tree) {
    if (objects_ != nullptr) {
      tree->raw = objects_->Read(id, GIT_OBJECT_TREE);
      if (tree->raw && ScanEntries(tree->raw.bytes(), &tree->entries)) return true;
      tree->entries.clear();
    }
    git_tree* raw = nullptr;
    if (git_tree_lookup(&raw, repo_, &id) != 0) {
      const git_error* err = git_error_last();
      *reason_ = "cannot read tree " + prefix_ + std::string(name) + ": " +
                 (err != nullptr ? err->message : "unknown error");
      return false;
    }
    tree->parsed.reset(raw);
    EntriesOf(raw, &tree->entries);
    return true;
  }

 private:
  // An entry only one side has: a file, or every file under a folder.
  bool Whole(git_delta_t status, const Entry* e) {
    if (!IsTree(e->mode)) {
      if (status == GIT_DELTA_ADDED)
        Leaf(status, nullptr, e);
      else
        Leaf(status, e, nullptr);
      return true;
    }
    return status == GIT_DELTA_ADDED ? Descend(nullptr, e) : Descend(e, nullptr);
  }

  bool Descend(const Entry* ea, const Entry* eb) {
    Tree ta, tb;
    const std::string_view name = (ea != nullptr ? ea : eb)->name;
    if (ea != nullptr && eb != nullptr) {
      if (!LoadPair(IdOf(*ea), IdOf(*eb), name, name, &ta, &tb)) return false;
    } else if (ea != nullptr ? !Load(IdOf(*ea), name, &ta) : !Load(IdOf(*eb), name, &tb)) {
      return false;
    }
    const size_t length = prefix_.size();
    prefix_.append(name).push_back('/');
    const bool ok = Walk(ea != nullptr ? &ta : nullptr, eb != nullptr ? &tb : nullptr);
    prefix_.resize(length);
    return ok;
  }

  void Leaf(git_delta_t status, const Entry* ea, const Entry* eb) {
    TreeChange& c = out_->emplace_back();
    c.status = status;
    c.path = prefix_;
    c.path.append((ea != nullptr ? ea : eb)->name);
    if (ea != nullptr) {
      c.old_mode = ea->mode;
      std::memcpy(c.old_id.id, ea->id, GIT_OID_RAWSZ);
    }
    if (eb != nullptr) {
      c.new_mode = eb->mode;
      std::memcpy(c.new_id.id, eb->id, GIT_OID_RAWSZ);
    }
  }

  git_repository* repo_;
  RawObjects* objects_;
  std::vector<TreeChange>* out_;
  std::string* reason_;
  std::string prefix_;
};

}  // namespace

bool DiffTrees(git_repository* repo, git_tree* old_tree, git_tree* new_tree,
               std::vector<TreeChange>* out, std::string* reason) {
  Tree a, b;
  if (old_tree != nullptr) EntriesOf(old_tree, &a.entries);
  if (new_tree != nullptr) EntriesOf(new_tree, &b.entries);
  return Walker(repo, nullptr, out, reason)
      .Walk(old_tree != nullptr ? &a : nullptr, new_tree != nullptr ? &b : nullptr);
}

bool DiffTreeIds(git_repository* repo, RawObjects* objects, const git_oid* old_tree,
                 const git_oid* new_tree, std::vector<TreeChange>* out, std::string* reason) {
  Walker walker(repo, objects, out, reason);
  Tree a, b;
  if (old_tree != nullptr && new_tree != nullptr) {
    if (!walker.LoadPair(*old_tree, *new_tree, "(the old root)", "(the new root)", &a, &b)) return false;
  } else {
    if (old_tree != nullptr && !walker.Load(*old_tree, "(the old root)", &a)) return false;
    if (new_tree != nullptr && !walker.Load(*new_tree, "(the new root)", &b)) return false;
  }
  return walker.Walk(old_tree != nullptr ? &a : nullptr, new_tree != nullptr ? &b : nullptr);
}

bool PlainPath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.back() == '/' || path.front() == '!' ||
      path.front() == '#' || path == "." || path.find("//") != std::string_view::npos)
    return false;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == '\\' || c == '*' || c == '?' || c == '[') return false;
  }
  return true;
}

bool DiffTreePath(git_repository* repo, RawObjects* objects, const git_oid* old_tree,
                  const git_oid* new_tree, std::string_view path, std::vector<TreeChange>* out,
                  std::string* reason) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::string_view folder =
      slash == std::string_view::npos ? std::string_view() : path.substr(0, slash + 1);
  // Each side's entry at `path` (none when a folder on the way is missing or not a folder): the
  // walk below lists what differs at it and under it, with `path`'s folder as the prefix.
  const bool was_incomplete = objects->incomplete();
  TreeEntry found[2];
  Tree sides[2];
  const git_oid* roots[2] = {old_tree, new_tree};
  for (int i = 0; i < 2; ++i) {
    if (roots[i] == nullptr) continue;
    found[i] = objects->PathEntry(*roots[i], path);
    if (found[i].present) sides[i].entries.push_back(Entry{CanonicalMode(found[i].mode), name,
                                                           found[i].id.id});
  }
  if (objects->incomplete() && !was_incomplete) {
    *reason = "cannot read a tree on the way to " + std::string(path);
    return false;
  }
  return Walker(repo, objects, out, reason, folder).Walk(&sides[0], &sides[1]);
}

}  // namespace shellac::gitfrag
