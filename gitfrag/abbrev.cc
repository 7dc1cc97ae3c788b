#include "gitfrag/abbrev.h"

#include <dirent.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "base/owned.h"

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

std::string UniqueAbbrev(git_odb* odb, const git_oid& oid, int min_len) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  int len = min_len < 4 ? 4 : min_len > GIT_OID_HEXSZ ? GIT_OID_HEXSZ : min_len;
  // The null id names no object: looking it up would only make libgit2 rescan the packs.
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
