#include "gitfrag/pack_reader.h"

#include <dirent.h>
#include <git2/sys/odb_backend.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/owned.h"
#include "gitfrag/blob_stream.h"

namespace shellac::gitfrag {

namespace {

constexpr size_t kPackHeader = 12;   // "PACK", version, object count
constexpr size_t kPackTrailer = 20;  // the pack's checksum
// Longer chains are taken for a cycle of REF_DELTAs (git's own limit for writing is 4095).
constexpr size_t kMaxChain = 10000;
// DEFLATE makes at most ~1032 bytes of one: a header that promises more than that of the bytes
// left in the pack lies, and is refused before anything is allocated for it.
constexpr uint64_t kMaxInflateRatio = 1032;
// A delta begins with two sizes of at most ten bytes each (64 bits, seven a byte).
constexpr size_t kDeltaSizesBytes = 20;

// A delta's size (little-endian groups of 7 bits): false past the delta's end or 64 bits.
bool DeltaSize(std::string_view delta, size_t* pos, uint64_t* size) {
  uint64_t value = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (*pos >= delta.size() || shift > 63) return false;
    const auto c = static_cast<unsigned char>(delta[(*pos)++]);
    const uint64_t bits = c & 0x7f;
    if (shift == 63 && bits > 1) return false;
    value |= bits << shift;
    if ((c & 0x80) == 0) break;
  }
  *size = value;
  return true;
}

// A mapped pack and its index.
struct Pack {
  std::string name;     // "pack-HASH", for the rescan
  uint32_t serial = 0;  // the cache's key for it: never reused by a reader
  std::unique_ptr<MappedFile> idx_file, pack_file;
  std::unique_ptr<PackIndex> index;
};

// One object folder's packs, as last listed.
struct Folder {
  std::string path;  // the object folder's real path
  std::string pack_dir;
  bool listed = false;
  // Every pack index in the folder is mapped and there is no multi-pack-index: the reader's
  // packs are all of the folder's packed objects (libgit2 also reads v1 indexes, any NAME.idx and
  // multi-pack-indexes).
  bool whole = true;
  ino_t ino = 0;
  timespec mtime{};
  std::vector<std::unique_ptr<Pack>> packs;
};

}  // namespace

ObjectBytes ObjectBytes::Make(size_t size) {
  ObjectBytes bytes;
  bytes.data_ = std::make_shared_for_overwrite<char[]>(std::max<size_t>(size, 1));  // never null
  bytes.size_ = size;
  return bytes;
}

namespace {

// ApplyDelta, writing the result where `make(size)` says once the target size is known and
// checked (a char* to `size` bytes, written once each on success).
template <typename Make>
bool ApplyDeltaTo(std::string_view base, std::string_view delta, uint64_t max_size, Make make,
                  std::string* error) {
  size_t pos = 0;
  uint64_t source = 0, target = 0;
  if (!DeltaSize(delta, &pos, &source) || !DeltaSize(delta, &pos, &target)) {
    *error = "delta: truncated sizes";
    return false;
  }
  if (source != base.size()) {
    *error = "delta: source size is not the base's";
    return false;
  }
  if (target > max_size) {
    *error = "delta: target size too large";
    return false;
  }
  char* const dst = make(static_cast<size_t>(target));
  size_t made = 0;
  const auto* d = reinterpret_cast<const unsigned char*>(delta.data());
  while (pos < delta.size()) {
    const unsigned cmd = d[pos++];
    if ((cmd & 0x80) != 0) {  // copy from the base: offset and size bytes as the low bits say
      uint64_t offset = 0, size = 0;
      for (unsigned i = 0; i < 4; ++i) {
        if ((cmd & (1u << i)) == 0) continue;
        if (pos >= delta.size()) {
          *error = "delta: truncated copy";
          return false;
        }
        offset |= uint64_t{d[pos++]} << (8 * i);
      }
      for (unsigned i = 0; i < 3; ++i) {
        if ((cmd & (0x10u << i)) == 0) continue;
        if (pos >= delta.size()) {
          *error = "delta: truncated copy";
          return false;
        }
        size |= uint64_t{d[pos++]} << (8 * i);
      }
      if (size == 0) size = 0x10000;
      if (offset > base.size() || size > base.size() - offset || size > target - made) {
        *error = "delta: copy outside the base or the target";
        return false;
      }
      std::memcpy(dst + made, base.data() + offset, static_cast<size_t>(size));
      made += static_cast<size_t>(size);
    } else if (cmd != 0) {  // insert the next cmd bytes
      if (cmd > delta.size() - pos || cmd > target - made) {
        *error = "delta: insert outside the delta or the target";
        return false;
      }
      std::memcpy(dst + made, delta.data() + pos, cmd);
      pos += cmd;
      made += cmd;
    } else {
      *error = "delta: reserved op 0";
      return false;
    }
  }
  if (made != target) {
    *error = "delta: result shorter than its target size";
    return false;
  }
  return true;
}

}  // namespace

bool ApplyDelta(std::string_view base, std::string_view delta, uint64_t max_size, std::string* out,
                std::string* error) {
  return ApplyDeltaTo(
      base, delta, max_size,
      [out](size_t size) {
        out->assign(size, '\0');
        return out->data();
      },
      error);
}

size_t PackCache::Home(uint32_t pack, uint64_t offset) const {
  // Fibonacci hashing: the product's high bits mix every bit of the offset and the pack.
  const uint64_t h = (offset ^ (uint64_t{pack} << 40)) * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
}

const PackedObject* PackCache::Find(uint32_t pack, uint64_t offset) {
  if (count_ == 0) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = Home(pack, offset);; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.pack == 0) return nullptr;
    if (slot.offset == offset && slot.pack == pack) {
      slot.referenced = true;
      return &slot.object;
    }
  }
}

void PackCache::Keep(uint32_t pack, uint64_t offset, const PackedObject& object) {
  const size_t size = object.bytes.size();
  if (size > limit_ / 4) return;
  Evict(size);
  if ((count_ + 1) * 4 > slots_.size() * 3) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = Home(pack, offset);
  for (; slots_[i].pack != 0; i = (i + 1) & mask) {
    if (slots_[i].offset == offset && slots_[i].pack == pack) return;
  }
  Slot& slot = slots_[i];
  slot.offset = offset;
  slot.pack = pack;
  slot.referenced = false;
  slot.object = object;
  ++count_;
  bytes_ += size;
}

void PackCache::set_limit(size_t bytes) {
  limit_ = bytes;
  Evict(0);
}

void PackCache::Grow() {
  std::vector<Slot> old(std::max<size_t>(slots_.size() * 2, 1024));
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (Slot& from : old) {
    if (from.pack == 0) continue;
    size_t i = Home(from.pack, from.offset);
    while (slots_[i].pack != 0) i = (i + 1) & mask;
    slots_[i] = std::move(from);
  }
  hand_ = 0;
}

void PackCache::Evict(size_t room) {
  const size_t mask = slots_.size() - 1;
  while (bytes_ + room > limit_ && count_ > 0) {
    Slot& slot = slots_[hand_];
    if (slot.pack != 0 && !slot.referenced) {
      Erase(hand_);  // the hand stays: an entry further on may have moved into its slot
      continue;
    }
    slot.referenced = false;
    hand_ = (hand_ + 1) & mask;
  }
}

void PackCache::Erase(size_t at) {
  bytes_ -= slots_[at].object.bytes.size();
  --count_;
  const size_t mask = slots_.size() - 1;
  // Each entry after `at` in its probe run moves back into the hole when the hole is between its
  // home and where it is (cyclically), so a look-up from its home still meets it.
  for (size_t j = (at + 1) & mask; slots_[j].pack != 0; j = (j + 1) & mask) {
    const size_t home = Home(slots_[j].pack, slots_[j].offset);
    if (((j - home) & mask) >= ((j - at) & mask)) {
      slots_[at] = std::move(slots_[j]);
      at = j;
    }
  }
  slots_[at] = Slot{};
}

struct PackReader::State {
  explicit State(size_t bytes) : cache(bytes) {}

  // Folders by path (each pack mapped once, whichever repository reaches it), and the chain of
  // folders each repository's objects folder reads.
  std::unordered_map<std::string, std::unique_ptr<Folder>> folders;
  std::unordered_map<std::string, std::vector<Folder*>> chains;
  // The chain last asked for (a page asks for one repository's many times): no hash of the path.
  std::string last_objects;
  const std::vector<Folder*>* last_chain = nullptr;
  uint32_t next_serial = 1;
  uint64_t rescans = 0;

  base::Owned<libdeflate_free_decompressor> inflater{libdeflate_alloc_decompressor()};
  // A delta's inflated ops, reused (grown, never cleared).
  std::unique_ptr<char[]> delta;
  size_t delta_capacity = 0;
  // The objects between a chain's root and its result when they are not kept (Keep::kRoot):
  // made in turn into these two (grown, never cleared), not allocated (and faulted in) each.
  // One grown past 8 MiB (a large file's versions) is let go at the next read.
  struct Scratch {
    std::unique_ptr<char[]> bytes;
    size_t capacity = 0;
    char* Fit(size_t size) {
      if (size > capacity) {
        capacity = size;
        bytes = std::make_unique_for_overwrite<char[]>(capacity);
      }
      return bytes.get();
    }
    void Trim() {
      if (capacity > (size_t{8} << 20)) *this = Scratch();
    }
  } scratch[2];
  // The stream that inflates the first bytes of a delta (HeaderAt), reset for each.
  struct PrefixStream {
    z_stream z{};
    bool ready = false;
    PrefixStream() = default;
    PrefixStream(const PrefixStream&) = delete;
    PrefixStream& operator=(const PrefixStream&) = delete;
    ~PrefixStream() {
      if (ready) inflateEnd(&z);
    }
  } prefix;

  PackCache cache;

  const std::vector<Folder*>& Chain(const std::string& objects);
  // Lists the folder's packs again when its pack folder changed (or was never listed); true
  // when it did.
  bool Refresh(Folder* folder);
  Status ReadAt(const Pack& pack, uint64_t offset, PackedObject* out, std::string* error,
                Keep keep);
  // The type and size of the object at `offset`: a delta's from its base's entry header and the
  // result size its own ops begin with (only the delta's ops inflated, no base read).
  Status HeaderAt(const Pack& pack, uint64_t offset, git_object_t* type, uint64_t* size,
                  std::string* error);
  // Inflates the first `want` bytes of the zlib stream at `at` into `out`; *got: how many there
  // were (fewer when the stream is shorter). False with *error when the stream is corrupt there.
  bool InflatePrefix(const Pack& pack, uint64_t at, size_t want, char* out, size_t* got,
                     std::string* error);
  // The entry header at `offset`, the `depth`th of a delta chain (`rest`: the pack from the entry
  // on): false with *error for a chain too long, an offset outside the pack or a bad header.
  bool EntryAt(const Pack& pack, uint64_t offset, size_t depth, PackEntryHeader* entry,
               std::string_view* rest, std::string* error) const;
  // The base of the delta entry at `offset` (`rest`: the pack from the entry on; *pos past its
  // header, moved past the base's name): kAbsent for a REF_DELTA whose base is in another pack.
  Status DeltaBase(const Pack& pack, uint64_t offset, std::string_view rest, int type, size_t* pos,
                   uint64_t* base_offset, std::string* error) const;
  // Calls `at(pack, offset)` for the pack entry of `id` in the objects folder's chain (kFailed
  // with *error when the reader has no decompressor).
  template <class At>
  Status Locate(const std::string& objects, const git_oid& id, std::string* error, At at);
  // Inflates the entry data at `at` into `out`, exactly `size` bytes (false with *error else).
  bool Inflate(const Pack& pack, uint64_t at, uint64_t size, char* out, std::string* error);
  // Whether `size` bytes of data at `at` could be there (checked before anything is allocated).
  bool Fits(const Pack& pack, uint64_t at, uint64_t size, std::string* error) const;
};

const std::vector<Folder*>& PackReader::State::Chain(const std::string& objects) {
  if (last_chain != nullptr && objects == last_objects) return *last_chain;
  auto it = chains.find(objects);
  if (it == chains.end()) {
    std::vector<Folder*> chain;
    for (const std::string& path : ObjectFolders(objects)) {
      char real[PATH_MAX];
      const std::string key = realpath(path.c_str(), real) != nullptr ? std::string(real) : path;
      std::unique_ptr<Folder>& folder = folders[key];
      if (!folder) {
        folder = std::make_unique<Folder>();
        folder->path = key;
        folder->pack_dir = key + "/pack";
      }
      chain.push_back(folder.get());
    }
    it = chains.emplace(objects, std::move(chain)).first;
  }
  last_objects = objects;
  last_chain = &it->second;  // map nodes stay put
  return it->second;
}

bool PackReader::State::Refresh(Folder* folder) {
  struct stat st {};
  const bool exists = stat(folder->pack_dir.c_str(), &st) == 0;
  if (folder->listed && exists && st.st_ino == folder->ino &&
      st.st_mtim.tv_sec == folder->mtime.tv_sec && st.st_mtim.tv_nsec == folder->mtime.tv_nsec)
    return false;
  if (folder->listed && !exists && folder->packs.empty()) return false;
  ++rescans;
  folder->listed = true;
  folder->ino = exists ? st.st_ino : 0;
  folder->mtime = exists ? st.st_mtim : timespec{};
  std::vector<std::unique_ptr<Pack>> packs;
  const base::Owned<closedir> dir(exists ? opendir(folder->pack_dir.c_str()) : nullptr);
  bool whole = !exists || dir != nullptr;
  while (dir != nullptr) {
    const dirent* e = readdir(dir.get());
    if (e == nullptr) break;
    const std::string_view name = e->d_name;
    if (name == "multi-pack-index") whole = false;
    if (!name.ends_with(".idx")) continue;
    if (!name.starts_with("pack-")) {
      whole = false;
      continue;
    }
    const std::string stem(name.substr(0, name.size() - 4));
    // A pack mapped before stays (its bytes never change: the name is their hash).
    bool kept = false;
    for (std::unique_ptr<Pack>& old : folder->packs) {
      if (old && old->name == stem) {
        packs.push_back(std::move(old));
        kept = true;
        break;
      }
    }
    if (kept) continue;
    auto pack = std::make_unique<Pack>();
    pack->name = stem;
    pack->idx_file = MappedFile::Of(folder->pack_dir + "/" + stem + ".idx");
    pack->pack_file = MappedFile::Of(folder->pack_dir + "/" + stem + ".pack");
    const bool mapped = pack->idx_file && pack->pack_file &&
                        (pack->index = PackIndex::FromBytes(pack->idx_file->bytes(), nullptr)) &&
                        pack->pack_file->bytes().size() >= kPackHeader + kPackTrailer &&
                        std::memcmp(pack->pack_file->bytes().data(), "PACK", 4) == 0;
    if (!mapped) {  // a pack being written, a version-1 index, a broken file: libgit2's then
      whole = false;
      continue;
    }
    pack->serial = next_serial++;
    packs.push_back(std::move(pack));
  }
  folder->packs = std::move(packs);
  folder->whole = whole;
  return true;
}

bool PackReader::State::Fits(const Pack& pack, uint64_t at, uint64_t size,
                             std::string* error) const {
  const uint64_t end = pack.pack_file->bytes().size() - kPackTrailer;
  if (at >= end) {
    *error = "pack: entry data past the pack's end";
    return false;
  }
  if (size > kMaxPackedObject || size / kMaxInflateRatio > end - at) {
    *error = "pack: entry size larger than its data could hold";
    return false;
  }
  return true;
}

bool PackReader::State::Inflate(const Pack& pack, uint64_t at, uint64_t size, char* out,
                                std::string* error) {
  const std::string_view bytes = pack.pack_file->bytes();
  const uint64_t left = bytes.size() - kPackTrailer - at;  // Fits checked `at`
  if (libdeflate_zlib_decompress(inflater.get(), bytes.data() + at, static_cast<size_t>(left),
                                 out, static_cast<size_t>(size), nullptr) != LIBDEFLATE_SUCCESS) {
    *error = "pack: entry data corrupt or not its header's size";
    return false;
  }
  return true;
}

bool PackReader::State::InflatePrefix(const Pack& pack, uint64_t at, size_t want, char* out,
                                      size_t* got, std::string* error) {
  const std::string_view bytes = pack.pack_file->bytes();
  const uint64_t left = bytes.size() - kPackTrailer - at;  // Fits checked `at`
  z_stream& z = prefix.z;
  if (!prefix.ready) {
    if (inflateInit(&z) != Z_OK) {
      *error = "zlib: cannot start an inflate";
      return false;
    }
    prefix.ready = true;
  } else if (inflateReset(&z) != Z_OK) {
    *error = "zlib: cannot reset an inflate";
    return false;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + at));
  z.avail_in = static_cast<uInt>(std::min<uint64_t>(left, UINT_MAX));
  z.next_out = reinterpret_cast<Bytef*>(out);
  z.avail_out = static_cast<uInt>(want);
  const int rc = inflate(&z, Z_SYNC_FLUSH);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
    *error = "pack: entry data corrupt";
    return false;
  }
  *got = want - z.avail_out;
  return true;
}

bool PackReader::State::EntryAt(const Pack& pack, uint64_t offset, size_t depth,
                                PackEntryHeader* entry, std::string_view* rest,
                                std::string* error) const {
  if (depth > kMaxChain) {
    *error = "pack: delta chain too long (a cycle?)";
    return false;
  }
  const std::string_view bytes = pack.pack_file->bytes();
  const uint64_t end = bytes.size() - kPackTrailer;
  if (offset < kPackHeader || offset >= end) {
    *error = "pack: offset outside the pack";
    return false;
  }
  *rest = bytes.substr(static_cast<size_t>(offset), static_cast<size_t>(end - offset));
  if (!ParsePackEntryHeader(rest->substr(0, std::min<size_t>(rest->size(), 16)), entry)) {
    *error = "pack: entry header not valid";
    return false;
  }
  return true;
}

PackReader::Status PackReader::State::DeltaBase(const Pack& pack, uint64_t offset,
                                                std::string_view rest, int type, size_t* pos,
                                                uint64_t* base_offset, std::string* error) const {
  if (type == GIT_OBJECT_OFS_DELTA) {
    // The distance back to the base: big-endian groups of 7 bits, each continuation adding 1.
    uint64_t distance = 0;
    for (size_t n = 0;; ++n) {
      if (*pos >= rest.size() || n >= 9) {
        *error = "pack: offset delta's base distance not valid";
        return Status::kFailed;
      }
      const auto c = static_cast<unsigned char>(rest[(*pos)++]);
      distance = (n == 0 ? 0 : (distance + 1) << 7) | (c & 0x7f);
      if ((c & 0x80) == 0) break;
    }
    if (distance == 0 || distance > offset) {
      *error = "pack: offset delta's base outside the pack";
      return Status::kFailed;
    }
    *base_offset = offset - distance;
    return Status::kFound;
  }
  // GIT_OBJECT_REF_DELTA
  if (rest.size() - *pos < GIT_OID_RAWSZ) {
    *error = "pack: reference delta truncated";
    return Status::kFailed;
  }
  git_oid base_id;
  std::memcpy(base_id.id, rest.data() + *pos, GIT_OID_RAWSZ);
  *pos += GIT_OID_RAWSZ;
  const std::optional<uint64_t> found = pack.index->Find(base_id);
  if (!found) return Status::kAbsent;  // a base in another pack: libgit2 looks further
  *base_offset = *found;
  return Status::kFound;
}

PackReader::Status PackReader::State::HeaderAt(const Pack& pack, uint64_t offset,
                                               git_object_t* type, uint64_t* size,
                                               std::string* error) {
  std::optional<uint64_t> result_size;  // the outermost delta's result
  for (size_t n = 0;; ++n) {
    if (const PackedObject* cached = cache.Find(pack.serial, offset)) {
      *type = cached->type;
      *size = result_size.value_or(cached->bytes.size());
      return Status::kFound;
    }
    PackEntryHeader entry;
    std::string_view rest;
    if (!EntryAt(pack, offset, n, &entry, &rest, error)) return Status::kFailed;
    if (entry.type >= GIT_OBJECT_COMMIT && entry.type <= GIT_OBJECT_TAG) {
      *type = static_cast<git_object_t>(entry.type);
      *size = result_size.value_or(entry.size);
      return Status::kFound;
    }
    size_t pos = entry.length;
    uint64_t base_offset = 0;
    if (const Status status = DeltaBase(pack, offset, rest, entry.type, &pos, &base_offset, error);
        status != Status::kFound)
      return status;
    if (!result_size) {
      // The delta's ops begin with its base's size and its result's: only their bytes are
      // inflated (as git's get_size_from_delta), not the whole delta.
      if (!Fits(pack, offset + pos, entry.size, error)) return Status::kFailed;
      char head[kDeltaSizesBytes];
      size_t got = 0;
      if (!InflatePrefix(pack, offset + pos,
                         static_cast<size_t>(std::min<uint64_t>(entry.size, sizeof head)), head,
                         &got, error))
        return Status::kFailed;
      const std::string_view ops(head, got);
      size_t at = 0;
      uint64_t base_size = 0, target = 0;
      if (!DeltaSize(ops, &at, &base_size) || !DeltaSize(ops, &at, &target)) {
        *error = "pack: delta's sizes not valid";
        return Status::kFailed;
      }
      result_size = target;
    }
    offset = base_offset;
  }
}

PackReader::Status PackReader::State::ReadAt(const Pack& start, uint64_t offset, PackedObject* out,
                                             std::string* error, Keep keep) {
  struct Delta {
    uint64_t offset;  // the entry's
    uint64_t data;    // its zlib data's
    uint64_t size;    // its inflated ops' size
  };
  std::vector<Delta> chain;
  const Pack& pack = start;  // a REF_DELTA's base is looked up in the same pack only
  for (Scratch& s : scratch) s.Trim();
  PackedObject base;
  for (;;) {
    if (const PackedObject* cached = cache.Find(pack.serial, offset)) {
      base = *cached;
      break;
    }
    PackEntryHeader entry;
    std::string_view rest;
    if (!EntryAt(pack, offset, chain.size(), &entry, &rest, error)) return Status::kFailed;
    if (entry.type >= GIT_OBJECT_COMMIT && entry.type <= GIT_OBJECT_TAG) {
      base.type = static_cast<git_object_t>(entry.type);
      if (!Fits(pack, offset + entry.length, entry.size, error)) return Status::kFailed;
      ObjectBytes whole = ObjectBytes::Make(static_cast<size_t>(entry.size));
      if (!Inflate(pack, offset + entry.length, entry.size, whole.data(), error))
        return Status::kFailed;
      base.bytes = std::move(whole);
      cache.Keep(pack.serial, offset, base);
      break;
    }
    size_t pos = entry.length;
    uint64_t base_offset = 0;
    if (const Status status = DeltaBase(pack, offset, rest, entry.type, &pos, &base_offset, error);
        status != Status::kFound)
      return status;
    chain.push_back(Delta{offset, offset + pos, entry.size});
    offset = base_offset;
  }
  // Apply the deltas from the base outwards; each result is the next one's base, kept (kChain),
  // or, short of the last, made in a scratch buffer (kRoot).
  std::string_view source = base.bytes.view();
  for (size_t i = chain.size(); i-- > 0;) {
    if (!Fits(pack, chain[i].data, chain[i].size, error)) return Status::kFailed;
    if (chain[i].size > delta_capacity) {
      delta_capacity = static_cast<size_t>(chain[i].size);
      delta = std::make_unique_for_overwrite<char[]>(delta_capacity);
    }
    if (!Inflate(pack, chain[i].data, chain[i].size, delta.get(), error)) return Status::kFailed;
    const bool kept = i == 0 || keep == Keep::kChain;
    ObjectBytes result;
    char* target = nullptr;
    size_t made = 0;
    const auto make = [&](size_t size) {
      made = size;
      if (kept) {
        result = ObjectBytes::Make(size);
        target = result.data();
      } else {
        target = scratch[i % 2].Fit(size);
      }
      return target;
    };
    const std::string_view ops(delta.get(), static_cast<size_t>(chain[i].size));
    if (!ApplyDeltaTo(source, ops, kMaxPackedObject, make, error)) return Status::kFailed;
    if (!kept) {
      source = std::string_view(target, made);
      continue;
    }
    base.bytes = std::move(result);
    source = base.bytes.view();
    if (keep == Keep::kChain) cache.Keep(pack.serial, chain[i].offset, base);
  }
  *out = std::move(base);
  return Status::kFound;
}

PackReader::PackReader(size_t cache_bytes) : state_(std::make_unique<State>(cache_bytes)) {}
PackReader::~PackReader() = default;

void PackReader::set_cache_limit(size_t bytes) {
  state_->cache.set_limit(bytes);
}

size_t PackReader::cache_limit() const {
  return state_->cache.limit();
}
size_t PackReader::cached_bytes() const {
  return state_->cache.bytes();
}
uint64_t PackReader::rescans() const {
  return state_->rescans;
}

PackReader::Status PackReader::Read(const std::string& objects, const git_oid& id,
                                    PackedObject* out, std::string* error, Keep keep) {
  State& s = *state_;
  return s.Locate(objects, id, error, [&](const Pack& pack, uint64_t offset) {
    return s.ReadAt(pack, offset, out, error, keep);
  });
}

PackReader::Status PackReader::ReadUnlessLarge(const std::string& objects, const git_oid& id,
                                               uint64_t larger_than, PackedObject* out, bool* large,
                                               git_object_t* type, uint64_t* size,
                                               std::string* error, Keep keep) {
  State& s = *state_;
  *large = false;
  return s.Locate(objects, id, error, [&](const Pack& pack, uint64_t offset) {
    if (!s.cache.Find(pack.serial, offset)) {
      PackEntryHeader entry;
      std::string_view rest;
      if (!s.EntryAt(pack, offset, 0, &entry, &rest, error)) return Status::kFailed;
      if (entry.type >= GIT_OBJECT_COMMIT && entry.type <= GIT_OBJECT_TAG &&
          entry.size > larger_than) {
        *large = true;
        *type = static_cast<git_object_t>(entry.type);
        *size = entry.size;
        return Status::kFound;
      }
    }
    const Status status = s.ReadAt(pack, offset, out, error, keep);
    if (status == Status::kFound) {
      *type = out->type;
      *size = out->bytes.size();
    }
    return status;
  });
}

PackReader::Status PackReader::ReadHeader(const std::string& objects, const git_oid& id,
                                          git_object_t* type, uint64_t* size, std::string* error) {
  State& s = *state_;
  return s.Locate(objects, id, error, [&](const Pack& pack, uint64_t offset) {
    return s.HeaderAt(pack, offset, type, size, error);
  });
}

template <class At>
PackReader::Status PackReader::State::Locate(const std::string& objects, const git_oid& id,
                                             std::string* error, At at) {
  if (!inflater) {
    *error = "libdeflate: no decompressor";
    return Status::kFailed;
  }
  const std::vector<Folder*>& folders_read = Chain(objects);
  for (int look = 0; look < 2; ++look) {
    for (Folder* folder : folders_read) {
      if (!folder->listed) Refresh(folder);
      for (const std::unique_ptr<Pack>& pack : folder->packs) {
        if (const std::optional<uint64_t> offset = pack->index->Find(id)) return at(*pack, *offset);
      }
    }
    // Not in the packs as last listed: look again at the folders that changed (a push, a
    // repack), once; a loose object costs a stat of each pack folder.
    bool changed = false;
    for (Folder* folder : folders_read) changed |= Refresh(folder);
    if (!changed) break;
  }
  return Status::kAbsent;
}

bool PackReader::Contains(const std::string& objects, const git_oid& id) {
  State& s = *state_;
  const std::vector<Folder*>& chain = s.Chain(objects);
  for (int look = 0; look < 2; ++look) {
    for (Folder* folder : chain) {
      if (!folder->listed) s.Refresh(folder);
      for (const std::unique_ptr<Pack>& pack : folder->packs) {
        if (pack->index->Find(id)) return true;
      }
    }
    bool changed = false;  // as Read: the folders that changed are listed again, once
    for (Folder* folder : chain) changed |= s.Refresh(folder);
    if (!changed) break;
  }
  return false;
}

namespace {

// Leading hex digits two ids share.
int SharedDigits(const git_oid& a, const git_oid& b) {
  for (int i = 0; i < GIT_OID_RAWSZ; ++i) {
    if (a.id[i] != b.id[i]) return 2 * i + ((a.id[i] >> 4) == (b.id[i] >> 4) ? 1 : 0);
  }
  return GIT_OID_HEXSZ;
}

}  // namespace

bool PackReader::SharedHexDigits(const std::string& objects, const git_oid& id, int* shared,
                                 std::vector<std::string_view>* folders) {
  State& s = *state_;
  const std::vector<Folder*>& chain = s.Chain(objects);
  folders->clear();
  for (const Folder* folder : chain) folders->push_back(folder->path);
  for (int look = 0; look < 2; ++look) {
    int most = 0;
    bool whole = true, present = false;
    for (Folder* folder : chain) {
      if (!folder->listed) s.Refresh(folder);
      whole = whole && folder->whole;
      for (const std::unique_ptr<Pack>& pack : folder->packs) {
        const PackIndex& index = *pack->index;
        uint32_t at = index.LowerBound(id);
        if (at > 0) most = std::max(most, SharedDigits(index.Id(at - 1), id));
        if (at < index.size() && SharedDigits(index.Id(at), id) == GIT_OID_HEXSZ) {
          present = true;
          ++at;
        }
        if (at < index.size()) most = std::max(most, SharedDigits(index.Id(at), id));
      }
    }
    bool changed = false;
    if (!present && look == 0) {  // as Contains: folders that changed are listed again, once
      for (Folder* folder : chain) changed |= s.Refresh(folder);
    }
    if (!changed) {
      *shared = most;
      return whole;
    }
  }
  return false;  // not reached: the second look changes nothing
}

namespace {
std::atomic<size_t> pack_cache_bytes{kPackCacheBytes};
}  // namespace

void SetPackCacheBytes(size_t bytes) {
  pack_cache_bytes.store(bytes, std::memory_order_relaxed);
}

PackReader& ThreadPackReader() {
  thread_local PackReader reader;
  return reader;
}

bool ObjectsFolder(git_repository* repo, std::string* objects) {
  const char* git_dir = git_repository_path(repo);
  if (git_dir == nullptr) return false;
  objects->assign(git_dir);
  if (!objects->ends_with('/')) objects->push_back('/');
  *objects += "objects";
  return true;
}

PackReader* ThreadReaderIfOn() {
  const size_t bytes = pack_cache_bytes.load(std::memory_order_relaxed);
  if (bytes == 0) return nullptr;
  PackReader& reader = ThreadPackReader();
  if (reader.cache_limit() != bytes) reader.set_cache_limit(bytes);
  return &reader;
}

namespace {

// Object `id` through this thread's reader, or false when the reader is off or does not have it.
bool ReadThroughThread(const std::string& objects, const git_oid& id, PackedObject* object,
                       PackReader::Keep keep = PackReader::Keep::kChain) {
  PackReader* reader = ThreadReaderIfOn();
  std::string error;
  return reader != nullptr &&
         reader->Read(objects, id, object, &error, keep) == PackReader::Status::kFound;
}

thread_local int packed_reads_depth = 0;

struct ReaderBackend {
  git_odb_backend parent;  // first: libgit2 hands back this pointer
  std::string objects;
};

int BackendRead(void** data, size_t* size, git_object_t* type, git_odb_backend* backend,
                const git_oid* id) {
  if (packed_reads_depth == 0) return GIT_PASSTHROUGH;
  const auto* self = reinterpret_cast<const ReaderBackend*>(backend);
  PackedObject object;
  if (!ReadThroughThread(self->objects, *id, &object)) return GIT_PASSTHROUGH;
  const std::string_view bytes = object.bytes.view();
  // NUL-terminated, as libgit2's own backends hand objects over.
  auto* buffer = static_cast<char*>(git_odb_backend_data_alloc(backend, bytes.size() + 1));
  if (buffer == nullptr) return GIT_PASSTHROUGH;
  std::memcpy(buffer, bytes.data(), bytes.size());
  buffer[bytes.size()] = '\0';
  *data = buffer;
  *size = bytes.size();
  *type = object.type;
  return 0;
}

// git_odb_read_header's answer through the reader: the object's type and size without reading
// its base (a file listing's sizes, a blob's before it is shown).
int BackendReadHeader(size_t* size, git_object_t* type, git_odb_backend* backend,
                      const git_oid* id) {
  PackReader* reader = packed_reads_depth == 0 ? nullptr : ThreadReaderIfOn();
  if (reader == nullptr) return GIT_PASSTHROUGH;
  const auto* self = reinterpret_cast<const ReaderBackend*>(backend);
  uint64_t found = 0;
  std::string error;
  if (reader->ReadHeader(self->objects, *id, type, &found, &error) != PackReader::Status::kFound)
    return GIT_PASSTHROUGH;
  *size = static_cast<size_t>(found);
  return 0;
}

// git_odb_foreach calls every backend's foreach unchecked: this one lists nothing (the objects
// are libgit2's packed backend's, which lists them).
int BackendForeach(git_odb_backend*, git_odb_foreach_cb, void*) {
  return 0;
}

void BackendFree(git_odb_backend* backend) {
  delete reinterpret_cast<ReaderBackend*>(backend);
}

// Ahead of libgit2's loose (2) and packed (1) backends.
constexpr int kReaderBackendPriority = 10;

}  // namespace

ObjectBytes ReadPacked(git_repository* repo, const git_oid& id, git_object_t type,
                       PackReader::Keep keep) {
  std::string objects;
  PackedObject object;
  if (!ObjectsFolder(repo, &objects) || !ReadThroughThread(objects, id, &object, keep) ||
      object.type != type)
    return {};
  return std::move(object.bytes);
}

bool ReadPackedUnlessLarge(git_repository* repo, const git_oid& id, git_object_t type,
                           uint64_t larger_than, PackReader::Keep keep, ObjectBytes* bytes,
                           std::optional<uint64_t>* large) {
  PackReader* reader = ThreadReaderIfOn();
  std::string objects, error;
  PackedObject object;
  bool is_large = false;
  git_object_t found = GIT_OBJECT_INVALID;
  uint64_t size = 0;
  if (reader == nullptr || !ObjectsFolder(repo, &objects) ||
      reader->ReadUnlessLarge(objects, id, larger_than, &object, &is_large, &found, &size, &error,
                              keep) != PackReader::Status::kFound ||
      found != type)
    return false;
  if (is_large) {
    *large = size;
  } else {
    *bytes = std::move(object.bytes);
    large->reset();
  }
  return true;
}

PackedLookup::PackedLookup(git_repository* repo) {
  if (pack_cache_bytes.load(std::memory_order_relaxed) == 0 || !ObjectsFolder(repo, &objects_))
    objects_.clear();
}

bool PackedLookup::Has(const git_oid& id) {
  return !objects_.empty() && ThreadPackReader().Contains(objects_, id);
}

bool PackedHas(git_repository* repo, const git_oid& id) {
  return PackedLookup(repo).Has(id);
}

bool AddPackReaderBackend(git_repository* repo) {
  auto backend = std::make_unique<ReaderBackend>();
  git_odb* raw_odb = nullptr;
  if (!ObjectsFolder(repo, &backend->objects) ||
      git_odb_init_backend(&backend->parent, GIT_ODB_BACKEND_VERSION) != 0 ||
      git_repository_odb(&raw_odb, repo) != 0)
    return false;
  const base::Owned<git_odb_free> odb(raw_odb);
  backend->parent.read = BackendRead;
  backend->parent.read_header = BackendReadHeader;
  backend->parent.foreach = BackendForeach;
  backend->parent.free = BackendFree;
  if (git_odb_add_backend(odb.get(), &backend->parent, kReaderBackendPriority) != 0) return false;
  backend.release();  // the database frees it
  return true;
}

PackedReadsScope::PackedReadsScope() {
  ++packed_reads_depth;
}
PackedReadsScope::~PackedReadsScope() {
  --packed_reads_depth;
}

}  // namespace shellac::gitfrag
