#include "gitfrag/abbrev.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "base/owned.h"
#include "gitfrag/pack_reader.h"

namespace shellac::gitfrag {
namespace {

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Objects in one pack index: the last entry of its fan-out table (v2 after an 8-byte header).
uint64_t IndexCount(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  unsigned char head[8], last[4];
  uint64_t count = 0;
  if (std::fread(head, 1, sizeof head, f) == sizeof head) {
    const bool v2 = head[0] == 0xff && head[1] == 't' && head[2] == 'O' && head[3] == 'c';
    if (std::fseek(f, (v2 ? 8 : 0) + 255 * 4, SEEK_SET) == 0 &&
        std::fread(last, 1, sizeof last, f) == sizeof last)
      count = BigEndian32(last);
  }
  std::fclose(f);
  return count;
}

void CountObjectsDir(const std::string& objects, std::set<std::string>* seen, uint64_t* count) {
  if (!seen->insert(objects).second) return;  // alternates may list a folder twice
  const std::string pack_dir = objects + "/pack";
  if (const base::Owned<closedir> d(opendir(pack_dir.c_str())); d != nullptr) {
    while (dirent* e = readdir(d.get())) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.ends_with(".idx")) *count += IndexCount(pack_dir + "/" + name);
    }
  }
  std::ifstream alternates(objects + "/info/alternates");
  for (std::string line; std::getline(alternates, line);) {
    if (line.empty() || line[0] == '#') continue;
    CountObjectsDir(line[0] == '/' ? line : objects + "/" + line, seen, count);
  }
}

}  // namespace

uint64_t PackedObjectCount(const std::string& git_dir) {
  std::string objects = git_dir;
  if (!objects.empty() && objects.back() != '/') objects += '/';
  objects += "objects";
  std::set<std::string> seen;
  uint64_t count = 0;
  CountObjectsDir(objects, &seen, &count);
  return count;
}

int AbbrevLength(uint64_t packed_objects) {
  // msb: the index of the highest bit set (git's msb(); 0 for 0 and 1).
  int msb = 0;
  for (uint64_t n = packed_objects; n > 1; n >>= 1) ++msb;
  const int len = (msb + 1 + 1) / 2;
  return len < 7 ? 7 : len > GIT_OID_HEXSZ ? GIT_OID_HEXSZ : len;
}

namespace {

// min_len as both paths bound it.
int ClampedLength(int min_len) {
  return min_len < 4 ? 4 : min_len > GIT_OID_HEXSZ ? GIT_OID_HEXSZ : min_len;
}

// The most leading digits of `hex` (an id) that a loose object in object folder `folder` shares,
// the id itself aside, into *shared (kept when none shares more). As libgit2's loose backend
// reads: every entry of objects/XX whose name is 38 characters and that is not a folder (stat
// follows a link). False for an entry that is not a lowercase id (libgit2's answer is then its
// own).
bool LooseSharedDigits(std::string_view folder, const char* hex, int* shared) {
  char path[PATH_MAX];
  if (folder.size() + 4 > sizeof path) return false;
  std::memcpy(path, folder.data(), folder.size());
  path[folder.size()] = '/';
  std::memcpy(path + folder.size() + 1, hex, 2);
  path[folder.size() + 3] = '\0';
  const base::Owned<closedir> dir(opendir(path));
  if (dir == nullptr) return true;  // no such folder: no loose object starts so
  constexpr size_t kRest = GIT_OID_HEXSZ - 2;
  while (const dirent* e = readdir(dir.get())) {
    if (std::strlen(e->d_name) != kRest) continue;
    if (e->d_type != DT_REG) {
      struct stat st {};
      if (e->d_type == DT_DIR ||
          (fstatat(dirfd(dir.get()), e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode)))
        continue;
    }
    size_t same = 0;
    while (same < kRest && e->d_name[same] == hex[2 + same]) ++same;
    for (size_t i = same; i < kRest; ++i) {
      const char c = e->d_name[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    if (same < kRest) *shared = std::max(*shared, static_cast<int>(2 + same));
  }
  return true;
}

}  // namespace

std::string UniqueAbbrev(git_repository* repo, git_odb* odb, const git_oid& oid, int min_len) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  const int len = ClampedLength(min_len);
  // The null id names no object: looking it up would only make libgit2 rescan the packs.
  if (git_oid_is_zero(&oid) || odb == nullptr) return std::string(hex, len);
  // Kept by the thread: a page abbreviates many ids of one repository.
  thread_local std::string git_dir, objects;
  thread_local std::vector<std::string_view> folders;
  PackReader* reader = ThreadReaderIfOn();
  const char* path = repo == nullptr ? nullptr : git_repository_path(repo);
  if (path != nullptr && git_dir != path) {
    git_dir = path;
    if (!ObjectsFolder(repo, &objects)) objects.clear();
  }
  int shared = 0;
  if (reader == nullptr || path == nullptr || objects.empty() ||
      !reader->SharedHexDigits(objects, oid, &shared, &folders))
    return UniqueAbbrevThroughOdb(odb, oid, min_len);
  for (const std::string_view folder : folders) {
    if (!LooseSharedDigits(folder, hex, &shared)) return UniqueAbbrevThroughOdb(odb, oid, min_len);
  }
  return std::string(hex, std::clamp(shared + 1, len, GIT_OID_HEXSZ));
}

std::string UniqueAbbrevThroughOdb(git_odb* odb, const git_oid& oid, int min_len) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  int len = ClampedLength(min_len);
  if (git_oid_is_zero(&oid) || odb == nullptr) return std::string(hex, len);
  for (; len < GIT_OID_HEXSZ; ++len) {
    git_oid prefix, found;
    if (git_oid_fromstrn(&prefix, hex, len) != 0) break;
    const int rc = git_odb_exists_prefix(&found, odb, &prefix, len);
    if (rc != GIT_EAMBIGUOUS && !(rc == 0 && !git_oid_equal(&found, &oid))) break;
  }
  return std::string(hex, len);
}

}  // namespace shellac::gitfrag
