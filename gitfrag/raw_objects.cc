#include "gitfrag/raw_objects.h"

#include <cstring>
#include <optional>
#include <string>

#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"

namespace shellac::gitfrag {

namespace {

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kTree = 0040000;

struct TreeName {
  git_oid tree;
  std::string name;
};
struct TreeNameHash {
  size_t operator()(const TreeName& k) const {
    return OidHash()(k.tree) ^ (std::hash<std::string>()(k.name) * 31);
  }
};
struct TreeNameEqual {
  bool operator()(const TreeName& a, const TreeName& b) const {
    return OidEqual()(a.tree, b.tree) && a.name == b.name;
  }
};

// Process-wide: a tree's entry for a name never changes. Bounded by count: two generations of
// 200,000 tree entries (~100 bytes each).
SharedMemo<TreeName, TreeEntry, TreeNameHash, TreeNameEqual>& TreeMemo() {
  static SharedMemo<TreeName, TreeEntry, TreeNameHash, TreeNameEqual> memo(200000);
  return memo;
}

// The entry named `name` in a raw tree object ("MODE NAME\0" and 20 id bytes per entry).
TreeEntry ScanTree(std::string_view raw, std::string_view name) {
  TreeEntry found;
  const char* p = raw.data();
  const char* const end = raw.data() + raw.size();
  while (p < end) {
    const char* space = static_cast<const char*>(std::memchr(p, ' ', static_cast<size_t>(end - p)));
    if (space == nullptr) break;
    const char* nul = static_cast<const char*>(
        std::memchr(space + 1, '\0', static_cast<size_t>(end - space - 1)));
    if (nul == nullptr || end - nul < 1 + GIT_OID_RAWSZ) break;
    if (static_cast<size_t>(nul - space - 1) == name.size() &&
        std::memcmp(space + 1, name.data(), name.size()) == 0) {
      uint32_t mode = 0;
      for (const char* m = p; m < space; ++m) mode = mode * 8 + static_cast<uint32_t>(*m - '0');
      found.present = true;
      found.mode = mode;
      std::memcpy(found.id.id, nul + 1, GIT_OID_RAWSZ);
      return found;
    }
    p = nul + 1 + GIT_OID_RAWSZ;
  }
  return found;
}

constexpr bool IsGitSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string_view TrimmedSpace(std::string_view s) {
  while (!s.empty() && IsGitSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsGitSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A signature line's text after its header word when it has the plain shape "NAME <EMAIL> SECONDS"
// (a zone, or anything else, may follow a space): one '<' before one '>', then a space and up to
// 15 digits. Read as libgit2's git_signature__parse reads it (name and e-mail trimmed); false for
// any other shape, which is left to libgit2.
bool ParsePlainSignature(std::string_view text, std::string_view* name, std::string_view* email,
                         int64_t* time) {
  const size_t lt = text.find('<'), gt = text.find('>');
  if (lt == std::string_view::npos || gt == std::string_view::npos || gt < lt ||
      text.find('<', lt + 1) != std::string_view::npos ||
      text.find('>', gt + 1) != std::string_view::npos)
    return false;
  size_t i = gt + 1;
  if (i >= text.size() || text[i] != ' ') return false;
  const size_t digits = ++i;
  int64_t seconds = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && i - digits < 15; ++i)
    seconds = seconds * 10 + (text[i] - '0');
  if (i == digits || (i < text.size() && text[i] != ' ')) return false;
  *name = TrimmedSpace(text.substr(0, lt));
  *email = TrimmedSpace(text.substr(lt + 1, gt - lt - 1));
  *time = seconds;
  return true;
}

bool IsHexId(std::string_view text) {
  if (text.size() != GIT_OID_HEXSZ) return false;
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

uint32_t CanonicalMode(uint32_t mode) {
  switch (mode & kTypeMask) {
    case 0100000:
      return (mode & 0100) != 0 ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
    case GIT_FILEMODE_LINK:
      return GIT_FILEMODE_LINK;
    case kTree:
      return GIT_FILEMODE_TREE;
    default:
      return GIT_FILEMODE_COMMIT;
  }
}

RawObjects::RawObjects(git_repository* repo) : repo_(repo) {
  git_odb* raw = nullptr;
  if (git_repository_odb(&raw, repo) == 0) odb_.reset(raw);
}

BackendObject RawObjects::Read(const git_oid& id, git_object_t type) {
  if (ObjectBytes packed = ReadPacked(repo_, id, type)) return BackendObject(std::move(packed));
  if (!odb_) {
    incomplete_ = true;
    return BackendObject();
  }
  for (size_t i = 0, n = git_odb_num_backends(odb_.get()); i < n; ++i) {
    git_odb_backend* backend = nullptr;
    if (git_odb_get_backend(&backend, odb_.get(), i) != 0 || backend->read == nullptr) continue;
    void* data = nullptr;
    size_t size = 0;
    git_object_t got = GIT_OBJECT_INVALID;
    if (backend->read(&data, &size, &got, backend, &id) != 0) continue;
    BackendObject object(backend, data, size);
    if (got != type) break;
    return object;
  }
  git_odb_object* raw = nullptr;
  if (git_odb_read(&raw, odb_.get(), &id) == 0) {
    const OdbObjectPtr object(raw);
    if (git_odb_object_type(object.get()) == type) {
      const size_t size = git_odb_object_size(object.get());
      void* copy = git_odb_backend_data_alloc(nullptr, size);
      if (copy != nullptr) {
        std::memcpy(copy, git_odb_object_data(object.get()), size);
        return BackendObject(nullptr, copy, size);
      }
    }
  }
  incomplete_ = true;
  return BackendObject();
}

TreeEntry RawObjects::Entry(const git_oid& tree, std::string_view name) {
  TreeName key{tree, std::string(name)};
  if (std::optional<TreeEntry> known = TreeMemo().Find(key)) return *known;
  const BackendObject object = Read(tree, GIT_OBJECT_TREE);
  if (!object) return TreeEntry{};  // unreadable: not remembered
  const TreeEntry entry = ScanTree(object.bytes(), name);
  TreeMemo().Add(key, entry);
  return entry;
}

TreeEntry RawObjects::PathEntry(const git_oid& root, std::string_view path) {
  git_oid tree = root;
  for (;;) {
    const size_t slash = path.find('/');
    if (slash == 0 || path.empty()) return TreeEntry{};  // an empty name: none (as libgit2)
    const TreeEntry entry = Entry(tree, path.substr(0, slash));
    if (!entry.present || slash == std::string_view::npos) return entry;
    if ((entry.mode & kTypeMask) != kTree) return TreeEntry{};
    if (slash + 1 == path.size()) return entry;  // "folder/"
    tree = entry.id;
    path.remove_prefix(slash + 1);
  }
}

bool ParsePlainCommit(std::string_view raw, CommitFields* out) {
  if (raw.find('\0') != std::string_view::npos) return false;
  enum { kTree, kParents, kCommitter, kOther } expect = kTree;
  size_t at = 0;
  for (;;) {
    const size_t nl = raw.find('\n', at);
    if (nl == std::string_view::npos) return false;  // no blank line
    const std::string_view line = raw.substr(at, nl - at);
    at = nl + 1;
    if (line.empty()) break;
    switch (expect) {
      case kTree:
        if (!line.starts_with("tree ") || !IsHexId(line.substr(5))) return false;
        expect = kParents;
        break;
      case kParents:
        if (line.starts_with("parent ")) {
          if (!IsHexId(line.substr(7))) return false;
          ++out->parents;
        } else if (line.starts_with("author ")) {
          if (!ParsePlainSignature(line.substr(7), &out->author_name, &out->author_email,
                                   &out->author_time))
            return false;
          expect = kCommitter;
        } else {
          return false;
        }
        break;
      case kCommitter: {
        std::string_view name, email;
        if (!line.starts_with("committer ") ||
            !ParsePlainSignature(line.substr(10), &name, &email, &out->committer_time))
          return false;
        expect = kOther;
        break;
      }
      case kOther:
        if (line.starts_with("encoding ")) {
          if (out->encoding) return false;  // libgit2 takes the last
          out->encoding = std::string(line.substr(9));
        }
        break;
    }
  }
  if (expect != kOther) return false;
  out->message = raw.substr(at);
  return true;
}

CommitFields FieldsOf(const git_commit* commit) {
  CommitFields fields;
  const git_signature* author = git_commit_author(commit);
  fields.author_name = author->name;
  fields.author_email = author->email;
  fields.author_time = author->when.time;
  fields.committer_time = git_commit_committer(commit)->when.time;
  fields.parents = git_commit_parentcount(commit);
  if (const char* encoding = git_commit_message_encoding(commit)) fields.encoding = encoding;
  fields.message = git_commit_message_raw(commit);
  return fields;
}

}  // namespace shellac::gitfrag
