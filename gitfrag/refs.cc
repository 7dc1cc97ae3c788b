#include "gitfrag/refs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "base/owned.h"

namespace shellac::gitfrag {
namespace {

std::string Key(const git_oid& oid) {
  return std::string(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
}

bool ParseOid(std::string_view hex, git_oid* out) {
  if (hex.size() < GIT_OID_HEXSZ) return false;
  return git_oid_fromstrn(out, hex.data(), GIT_OID_HEXSZ) == 0;
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
  std::string symbolic;           // "ref: X" target
  std::optional<git_oid> peeled;  // from a packed-refs "^" line
  bool peel_known = false;        // packed-refs says whether this ref peels (fully-peeled trait)
};

void WalkLoose(const std::string& dir, const std::string& prefix,
               std::map<std::string, RawRef>* refs) {
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
      WalkLoose(dir + "/" + name, full + "/", refs);
      continue;
    }
    const std::string content = ReadSmallFile(dir + "/" + name);
    RawRef r;
    git_oid oid;
    if (content.starts_with("ref: "))
      r.symbolic = content.substr(5);
    else if (ParseOid(content, &oid))
      r.oid = oid;
    else
      continue;
    (*refs)[full] = r;  // a loose ref overrides its packed copy
  }
}

void AddFingerprint(const std::string& path, std::string* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    out->append("-;");
    return;
  }
  std::ostringstream s;
  s << st.st_ino << ':' << st.st_size << ':' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec
    << ';';
  out->append(s.str());
}

void FingerprintDirs(const std::string& dir, std::string* out) {
  AddFingerprint(dir, out);
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

Decoration::Kind KindOf(const std::string& name, bool annotated) {
  if (name == "HEAD") return Decoration::Kind::kHead;
  if (name.starts_with("refs/heads/")) return Decoration::Kind::kBranch;
  if (name.starts_with("refs/tags/"))
    return annotated ? Decoration::Kind::kAnnotatedTag : Decoration::Kind::kTag;
  if (name.starts_with("refs/remotes/")) return Decoration::Kind::kRemote;
  return Decoration::Kind::kOther;
}

}  // namespace

std::string RefsFingerprint(const std::string& git_dir) {
  std::string out;
  AddFingerprint(git_dir + "/HEAD", &out);
  AddFingerprint(git_dir + "/packed-refs", &out);
  // A loose ref is updated by renaming a lock file over it, which changes its folder's mtime.
  FingerprintDirs(git_dir + "/refs", &out);
  return out;
}

std::shared_ptr<const RefIndex> RefIndex::Build(const std::string& git_dir, const Peeler& peel) {
  auto index = std::make_shared<RefIndex>();
  std::map<std::string, RawRef> refs;  // sorted by name, as git iterates them

  // packed-refs: "# pack-refs with: peeled fully-peeled sorted", then "SHA NAME" lines, each
  // optionally followed by "^SHA" (the object the ref peels to).
  bool fully_peeled = false, peeled_tags = false;
  {
    std::ifstream in(git_dir + "/packed-refs", std::ios::binary);
    std::string line;
    std::string last;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.starts_with("#")) {
        fully_peeled = line.find(" fully-peeled") != std::string::npos;
        peeled_tags = fully_peeled || line.find(" peeled") != std::string::npos;
        continue;
      }
      git_oid oid;
      if (line.starts_with("^")) {
        if (!last.empty() && ParseOid(std::string_view(line).substr(1), &oid))
          refs[last].peeled = oid;
        continue;
      }
      if (line.size() < GIT_OID_HEXSZ + 2 || !ParseOid(line, &oid)) continue;
      last = line.substr(GIT_OID_HEXSZ + 1);
      RawRef r;
      r.oid = oid;
      r.peel_known = fully_peeled || (peeled_tags && last.starts_with("refs/tags/"));
      refs[last] = r;
    }
  }
  WalkLoose(git_dir + "/refs", "refs/", &refs);

  auto resolve = [&](const RawRef& start) -> const RawRef* {
    const RawRef* r = &start;
    for (int depth = 0; depth < 5 && r != nullptr && !r->oid; ++depth) {
      auto it = refs.find(r->symbolic);
      r = it == refs.end() ? nullptr : &it->second;
    }
    return r != nullptr && r->oid ? r : nullptr;
  };

  auto decorate = [&](const std::string& name, const RawRef& raw) {
    const RawRef* r = resolve(raw);
    if (r == nullptr) return;
    git_oid target = *r->oid;
    bool annotated = false;
    if (r->peeled) {
      target = *r->peeled;
      annotated = true;
    } else if (!r->peel_known && name.starts_with("refs/tags/") && peel) {
      // No peeled line recorded (a loose tag): the object itself must say whether it is a tag.
      ++index->peel_calls_;
      if (auto p = peel(*r->oid)) {
        target = p->target;
        annotated = p->annotated;
      }
    }
    // git prepends each decoration, so the newest (last in name order) comes first.
    auto& list = index->by_commit_[Key(target)];
    list.insert(list.begin(), Decoration{KindOf(name, annotated), name});
  };

  for (const auto& [name, raw] : refs) {
    if (name.starts_with("refs/heads/")) {
      if (const RawRef* r = resolve(raw)) {
        const std::string short_name = name.substr(11);
        index->branches_.push_back(short_name);
        index->branch_tips_[short_name] = *r->oid;
      }
    }
    decorate(name, raw);
  }

  // HEAD comes last, so it is listed first.
  const std::string head = ReadSmallFile(git_dir + "/HEAD");
  RawRef head_ref;
  git_oid oid;
  if (head.starts_with("ref: ")) {
    head_ref.symbolic = head.substr(5);
    if (head_ref.symbolic.starts_with("refs/heads/"))
      index->head_branch_ = head_ref.symbolic.substr(11);
  } else if (ParseOid(head, &oid)) {
    head_ref.oid = oid;
  }
  decorate("HEAD", head_ref);
  return index;
}

const std::vector<Decoration>* RefIndex::For(const git_oid& commit) const {
  auto it = by_commit_.find(Key(commit));
  return it == by_commit_.end() ? nullptr : &it->second;
}

std::optional<git_oid> RefIndex::Branch(const std::string& short_name) const {
  auto it = branch_tips_.find(short_name);
  if (it == branch_tips_.end()) return std::nullopt;
  return it->second;
}

}  // namespace shellac::gitfrag
