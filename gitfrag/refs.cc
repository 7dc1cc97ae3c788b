#include "gitfrag/refs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>

#include "base/owned.h"

namespace shellac::gitfrag {
namespace {

constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[c] = static_cast<int8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c) t[c] = static_cast<int8_t>(c - 'A' + 10);
  return t;
}();

// Whether `s` starts with `prefix` (inline: the build asks this several times for each of thousands
// of refs).
inline bool HasPrefix(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

// The 40 hex digits at the start of `hex` (a packed-refs file has thousands: this is the build's
// inner loop, a table lookup per digit).
bool ParseOid(std::string_view hex, git_oid* out) {
  if (hex.size() < GIT_OID_HEXSZ) return false;
  for (size_t i = 0; i < GIT_OID_RAWSZ; ++i) {
    const int high = kHexValue[static_cast<unsigned char>(hex[2 * i])];
    const int low = kHexValue[static_cast<unsigned char>(hex[2 * i + 1])];
    if ((high | low) < 0) return false;
    out->id[i] = static_cast<unsigned char>(high << 4 | low);
  }
  return true;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::string s(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return s;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// One ref as found on disk before symbolic refs are resolved.
struct RawRef {
  std::optional<git_oid> oid;     // direct ref
  std::string_view symbolic;      // "ref: X" target
  std::optional<git_oid> peeled;  // from a packed-refs "^" line
  bool peel_known = false;        // packed-refs says whether this ref peels (fully-peeled trait)
};

struct NamedRef {
  std::string_view name;
  RawRef ref;
};

bool ByName(const NamedRef& a, const NamedRef& b) {
  return a.name < b.name;
}

// packed-refs: "# pack-refs with: peeled fully-peeled sorted", then "SHA NAME" lines, each
// optionally followed by "^SHA" (the object the ref peels to). Appends to `refs` in name order;
// names are views into `text`.
void ParsePackedRefs(std::string_view text, std::vector<NamedRef>* refs) {
  bool fully_peeled = false, peeled_tags = false, sorted = true;
  refs->reserve(refs->size() + text.size() / 64);  // a ref line is 50-100 bytes
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (!line.empty() && line[0] == '#') {
      fully_peeled = line.find(" fully-peeled") != std::string_view::npos;
      peeled_tags = fully_peeled || line.find(" peeled") != std::string_view::npos;
      continue;
    }
    git_oid oid;
    if (!line.empty() && line[0] == '^') {
      if (!refs->empty() && ParseOid(line.substr(1), &oid)) refs->back().ref.peeled = oid;
      continue;
    }
    if (line.size() < GIT_OID_HEXSZ + 2 || !ParseOid(line, &oid)) continue;
    NamedRef r{line.substr(GIT_OID_HEXSZ + 1), {}};
    r.ref.oid = oid;
    r.ref.peel_known = fully_peeled || (peeled_tags && HasPrefix(r.name, "refs/tags/"));
    if (!refs->empty() && !(refs->back().name < r.name)) sorted = false;
    refs->push_back(r);
  }
  if (sorted) return;  // git writes them sorted; anything else is sorted here, the last copy kept
  std::stable_sort(refs->begin(), refs->end(), ByName);
  std::vector<NamedRef> unique;
  for (const NamedRef& r : *refs) {
    if (!unique.empty() && unique.back().name == r.name)
      unique.back() = r;
    else
      unique.push_back(r);
  }
  *refs = std::move(unique);
}

// Loose refs under `dir`; their names (and symbolic targets) are kept in `names`.
void WalkLoose(const std::string& dir, const std::string& prefix, std::deque<std::string>* names,
               std::vector<NamedRef>* refs) {
  const base::Owned<closedir> d(opendir(dir.c_str()));
  if (d == nullptr) return;
  std::vector<std::pair<std::string, bool>> entries;
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name.ends_with(".lock")) continue;
    struct stat st;
    if (stat((dir + "/" + name).c_str(), &st) != 0) continue;
    entries.emplace_back(name, S_ISDIR(st.st_mode));
  }
  for (const auto& [name, is_dir] : entries) {
    const std::string full = prefix + name;
    if (is_dir) {
      WalkLoose(dir + "/" + name, full + "/", names, refs);
      continue;
    }
    const std::string content = ReadSmallFile(dir + "/" + name);
    NamedRef r;
    git_oid oid;
    if (HasPrefix(content, "ref: "))
      r.ref.symbolic = names->emplace_back(content.substr(5));
    else if (ParseOid(content, &oid))
      r.ref.oid = oid;
    else
      continue;
    r.name = names->emplace_back(full);
    refs->push_back(r);
  }
}

// A loose ref overrides its packed copy; the result stays in name order.
void MergeLoose(std::vector<NamedRef> loose, std::vector<NamedRef>* refs) {
  if (loose.empty()) return;
  std::sort(loose.begin(), loose.end(), ByName);
  std::vector<NamedRef> merged;
  merged.reserve(refs->size() + loose.size());
  auto packed = refs->begin();
  for (const NamedRef& l : loose) {
    while (packed != refs->end() && packed->name < l.name) merged.push_back(*packed++);
    if (packed != refs->end() && packed->name == l.name) ++packed;
    merged.push_back(l);
  }
  merged.insert(merged.end(), packed, refs->end());
  *refs = std::move(merged);
}

void FingerprintDirs(const std::string& dir, std::string* out) {
  AddFileFingerprint(dir, out);
  const base::Owned<closedir> d(opendir(dir.c_str()));
  if (d == nullptr) return;
  std::vector<std::string> subdirs;
  while (dirent* e = readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) subdirs.push_back(dir + "/" + e->d_name);
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& s : subdirs) {
    struct stat st;
    if (stat(s.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) FingerprintDirs(s, out);
  }
}

Decoration::Kind KindOf(std::string_view name, bool annotated) {
  if (name == "HEAD") return Decoration::Kind::kHead;
  if (HasPrefix(name, "refs/heads/")) return Decoration::Kind::kBranch;
  if (HasPrefix(name, "refs/tags/"))
    return annotated ? Decoration::Kind::kAnnotatedTag : Decoration::Kind::kTag;
  if (HasPrefix(name, "refs/remotes/")) return Decoration::Kind::kRemote;
  return Decoration::Kind::kOther;
}

}  // namespace

bool AddFileFingerprint(const std::string& path, std::string* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    out->append("-;");
    return false;
  }
  out->append(std::to_string(st.st_ino)).push_back(':');
  out->append(std::to_string(st.st_size)).push_back(':');
  out->append(std::to_string(st.st_mtim.tv_sec)).push_back('.');
  out->append(std::to_string(st.st_mtim.tv_nsec)).push_back(';');
  return true;
}

std::string RefsFingerprint(const std::string& git_dir) {
  std::string out;
  AddFileFingerprint(git_dir + "/HEAD", &out);
  AddFileFingerprint(git_dir + "/packed-refs", &out);
  // A loose ref is updated by renaming a lock file over it, which changes its folder's mtime.
  FingerprintDirs(git_dir + "/refs", &out);
  return out;
}

const std::string& RefIndex::InfoRefs(const std::function<std::string()>& make) const {
  std::call_once(info_refs_once_, [&] { info_refs_ = make(); });
  return info_refs_;
}

std::shared_ptr<const RefIndex> RefIndex::Build(const std::string& git_dir, const Peeler& peel) {
  static std::atomic<uint64_t> generations{0};
  auto index = std::make_shared<RefIndex>();
  index->generation_ = generations.fetch_add(1, std::memory_order_relaxed) + 1;
  // Refs sorted by name, as git iterates them. Names are views into index->packed_ (the whole
  // packed-refs file) or index->loose_names_, so they live as long as the index.
  std::vector<NamedRef> refs;
  index->packed_ = ReadWholeFile(git_dir + "/packed-refs");
  ParsePackedRefs(index->packed_, &refs);
  std::vector<NamedRef> loose;
  WalkLoose(git_dir + "/refs", "refs/", &index->loose_names_, &loose);
  MergeLoose(std::move(loose), &refs);

  auto find = [&](std::string_view name) -> const RawRef* {
    auto it = std::lower_bound(refs.begin(), refs.end(), name,
                               [](const NamedRef& r, std::string_view n) { return r.name < n; });
    return it == refs.end() || it->name != name ? nullptr : &it->ref;
  };
  auto resolve = [&](const RawRef& start) -> const RawRef* {
    const RawRef* r = &start;
    for (int depth = 0; depth < 5 && r != nullptr && !r->oid; ++depth) r = find(r->symbolic);
    return r != nullptr && r->oid ? r : nullptr;
  };

  // Every decoration with its target, in the order git makes them (refs in name order, HEAD
  // last); grouped by target below.
  std::vector<Pending> pending;
  pending.reserve(refs.size() + 1);
  auto decorate = [&](std::string_view name, const RawRef& raw) {
    const RawRef* r = resolve(raw);
    if (r == nullptr) return;
    git_oid target = *r->oid;
    bool annotated = false;
    if (r->peeled) {
      target = *r->peeled;
      annotated = true;
    } else if (!r->peel_known && HasPrefix(name, "refs/tags/") && peel) {
      // No peeled line recorded (a loose tag): the object itself must say whether it is a tag.
      ++index->peel_calls_;
      if (auto p = peel(*r->oid)) {
        target = p->target;
        annotated = p->annotated;
      }
    }
    pending.push_back({target, Decoration{KindOf(name, annotated), name}});
  };

  index->refs_.reserve(refs.size());
  for (const auto& [name, raw] : refs) {
    if (HasPrefix(name, "refs/")) {
      if (const RawRef* r = resolve(raw)) index->refs_.push_back({name, *r->oid, r->peel_known, r->peeled});
    }
    if (HasPrefix(name, "refs/heads/")) {
      if (const RawRef* r = resolve(raw)) {
        std::string short_name(name.substr(11));
        index->branches_.push_back(short_name);
        index->branch_tips_[std::move(short_name)] = *r->oid;
      }
    }
    decorate(name, raw);
  }

  // HEAD comes last, so it is listed first.
  const std::string head = ReadSmallFile(git_dir + "/HEAD");
  RawRef head_ref;
  git_oid oid;
  if (HasPrefix(head, "ref: ")) {
    head_ref.symbolic = index->loose_names_.emplace_back(head.substr(5));
    if (HasPrefix(head_ref.symbolic, "refs/heads/"))
      index->head_branch_ = head_ref.symbolic.substr(11);
  } else if (ParseOid(head, &oid)) {
    head_ref.oid = oid;
  }
  decorate("HEAD", head_ref);
  index->GroupByCommit(pending);
  return index;
}

namespace {

size_t SlotOf(const git_oid& commit, size_t mask) {
  return OidHash()(commit) & mask;
}

}  // namespace

void RefIndex::GroupByCommit(const std::vector<Pending>& pending) {
  size_t size = 16;
  while (size < 2 * pending.size()) size *= 2;
  slots_.assign(size, 0);
  const size_t mask = size - 1;
  // Pass 1: a group per target, counting its decorations (a slot holds its group's index + 1).
  std::vector<uint32_t> group_of(pending.size());
  groups_.reserve(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) {
    const git_oid& target = pending[i].target;
    size_t slot = SlotOf(target, mask);
    while (slots_[slot] != 0 && !OidEqual()(groups_[slots_[slot] - 1].commit, target))
      slot = (slot + 1) & mask;
    if (slots_[slot] == 0) {
      groups_.push_back({target, 0, 0});
      slots_[slot] = static_cast<uint32_t>(groups_.size());
    }
    group_of[i] = slots_[slot] - 1;
    ++groups_[group_of[i]].count;
  }
  uint32_t at = 0;
  for (Group& g : groups_) {
    g.begin = at;
    at += g.count;
    g.count = 0;
  }
  // Pass 2: git prepends each decoration, so the last made comes first: fill from the end.
  decorations_.resize(pending.size());
  for (size_t i = pending.size(); i-- > 0;) {
    Group& g = groups_[group_of[i]];
    decorations_[g.begin + g.count++] = pending[i].decoration;
  }
}

std::span<const Decoration> RefIndex::For(const git_oid& commit) const {
  if (slots_.empty()) return {};
  const size_t mask = slots_.size() - 1;
  for (size_t slot = SlotOf(commit, mask); slots_[slot] != 0; slot = (slot + 1) & mask) {
    const Group& g = groups_[slots_[slot] - 1];
    if (OidEqual()(g.commit, commit)) return {decorations_.data() + g.begin, g.count};
  }
  return {};
}

std::optional<git_oid> RefIndex::Branch(const std::string& short_name) const {
  auto it = branch_tips_.find(short_name);
  if (it == branch_tips_.end()) return std::nullopt;
  return it->second;
}

}  // namespace shellac::gitfrag
