// Blob streams: a blob's bytes inflated a piece at a time straight from git's files, for the plain
// page of a large file, so that no copy of the whole blob is ever held (libgit2 inflates an object
// whole). Two stored forms are read this way: a loose object (objects/XX/..., one zlib stream of
// "blob SIZE\0" and the bytes) and a pack entry stored whole (type blob in a pack; found through
// the pack's version-2 .idx). A blob stored as a delta needs its base inflated first:
// OpenBlobStream answers null for it, and the caller reads it with libgit2 instead.
//
// Nothing read from the files is trusted: the index is checked when it is mapped (header, fan-out
// order, size), an offset is bounds-checked before it is used, a pack entry's header is parsed
// from at most 16 bytes, and the stream fails (kFailed) when the zlib data is corrupt, ends before
// the size the header promised or goes on past it. A stream that fails after its first piece cuts
// the response (the caller sent the length first), as any BodyStream.
#pragma once

#include <git2.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitfrag/gitfrag.h"

namespace shellac::gitfrag {

// A read-only mapping of a whole regular file, unmapped with its owner.
class MappedFile {
 public:
  // Null when the file cannot be opened, is not a regular file, is empty or cannot be mapped.
  static std::unique_ptr<MappedFile> Of(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(addr_), size_}; }

 private:
  MappedFile(void* addr, size_t size) : addr_(addr), size_(size) {}
  void* addr_;
  size_t size_;
};

// The object folders git reads for the objects folder `objects`, in its order: that folder, then
// its alternates' (objects/info/alternates, read recursively; relative ones from the folder that
// names them), five levels deep at most, each once.
std::vector<std::string> ObjectFolders(const std::string& objects);

// A version-2 pack index (pack-*.idx) read in place: bytes it does not own, which must outlive it.
class PackIndex {
 public:
  // Null with *error (when set) saying why for bytes that are not a version-2 index: magic and
  // version, a fan-out table that never decreases, and a size that holds its ids, CRCs, offsets, a
  // whole number of 64-bit offsets and the two trailing checksums.
  static std::unique_ptr<PackIndex> FromBytes(std::string_view bytes, std::string* error);

  uint32_t size() const { return count_; }
  // The id at position `pos` (< size()), in ascending order when the file is well formed.
  git_oid Id(uint32_t pos) const;
  // The offset of `id`'s entry in the pack, or nullopt when the index does not have it or its
  // offset points outside the 64-bit table.
  std::optional<uint64_t> Find(const git_oid& id) const;
  // The first position whose id is not below `id` (size() when none is): where `id` is or would
  // be in a sorted index. Its neighbours there are the ids nearest it (abbrev.h).
  uint32_t LowerBound(const git_oid& id) const;

 private:
  PackIndex() = default;
  const unsigned char* fanout_ = nullptr;   // 256 cumulative counts by first id byte
  const unsigned char* ids_ = nullptr;      // count_ ids of 20 bytes
  const unsigned char* offsets_ = nullptr;  // count_ 31-bit offsets, or (high bit) 64-bit indexes
  const unsigned char* large_ = nullptr;    // large_count_ 64-bit offsets
  uint32_t count_ = 0;
  size_t large_count_ = 0;
};

// A pack entry's header (git's variable-length type and size).
struct PackEntryHeader {
  int type = 0;       // 1 commit, 2 tree, 3 blob, 4 tag, 6 offset delta, 7 reference delta
  uint64_t size = 0;  // the inflated data's size (a delta's own, not its result's)
  size_t length = 0;  // bytes of the header: the zlib data starts there
};
// False when `bytes` (the pack from the entry on) do not begin with a whole, valid header: an
// unknown type, or a size that does not fit 64 bits.
bool ParsePackEntryHeader(std::string_view bytes, PackEntryHeader* out);

// A loose object's inflated beginning, "TYPE SIZE\0": false unless it holds a whole header of a
// known type and a decimal size (no sign, no leading zero, fits 64 bits).
bool ParseLooseHeader(std::string_view inflated, std::string_view* type, uint64_t* size,
                      size_t* length);

// One blob's bytes, inflated as they are asked for. Memory: the zlib state, a 64 KiB input buffer
// and what Head() inflated ahead; never the blob.
class InflatingBlob : public BodyStream {
 public:
  ~InflatingBlob() override;
  // The first min(n, size) bytes (inflated ahead and sent by Next first), or nullopt with *error
  // when the data is corrupt.
  std::optional<std::string_view> Head(size_t n, std::string* error);
  Result Next(std::string* out, std::string* error) override;
  std::optional<uint64_t> Length() const override { return size_; }
  // Where the bytes come from: "loose" or "pack" (metrics and tests).
  const char* source() const { return loose_ ? "loose" : "pack"; }

 private:
  friend std::unique_ptr<InflatingBlob> OpenBlobStream(const std::string&, const git_oid&, uint64_t,
                                                       std::string*);
  struct State;
  InflatingBlob(std::unique_ptr<State> state, uint64_t size, bool loose);
  // Inflates up to `want` more of the blob's bytes onto *out; false with *error on corrupt data.
  bool Inflate(std::string* out, size_t want, std::string* error);

  std::unique_ptr<State> state_;
  uint64_t size_;
  uint64_t produced_ = 0;  // blob bytes inflated so far (pending_ included)
  std::string pending_;    // inflated by Head, not yet sent
  bool loose_;
  bool ended_ = false;  // zlib said the stream ended
};

// Opens blob `id` of the repository at `git_dir` (its objects folder, then each alternate's) as a
// stream, when it is loose or stored whole in a pack and its size is `size` (what the caller read
// from its header). Null, with *why saying which, when it is a delta, is missing, or its file is
// not readable or not what the index says: the caller then reads it whole.
std::unique_ptr<InflatingBlob> OpenBlobStream(const std::string& git_dir, const git_oid& id,
                                              uint64_t size, std::string* why);

}  // namespace shellac::gitfrag
