// Packed objects read by shellac itself: an object's bytes from git's pack files (version-2 .idx
// and .pack, mapped read-only) with its OFS_DELTA and REF_DELTA chain resolved here, inflated by
// libdeflate (the entry header gives the exact size), and the objects read kept in a cache bounded
// by bytes (PackCache: CLOCK eviction). libgit2's pack reader inflates with zlib (adler32 is a
// sixth of it) and keeps bases in a cache that cannot be tuned (16 MiB a pack, emptied whole when
// full, nothing over 1 MiB kept): on a log page inflating was half the instructions.
//
// Only what the hot readers want goes through it (a log's blob lines and its file lists' trees,
// blame's commits, trees and blobs, the path log's raw trees, the commit diff's trees and blobs,
// the tree and plain pages' commits, trees, blobs and listed sizes: AddPackReaderBackend); anything
// it does not find or cannot read — a loose object, a pack that came after its last look (it looks
// again once the pack folder changed), a REF_DELTA whose base is in another pack, an object over
// kMaxPackedObject, a corrupt entry — is answered "not here" and the caller reads the object
// through libgit2, so a page never fails where libgit2 would not.
//
// Nothing read from the files is trusted: indexes are checked when mapped (PackIndex), every
// offset and length is bounds-checked against the mapping, a delta's sizes and copy/insert ops
// against its base and result, a chain's length is bounded (a cycle of REF_DELTAs ends there),
// and an inflated size must be exactly the header's.
#pragma once

#include <git2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shellac::gitfrag {

// Objects larger than this (whole or as a delta's result) are left to libgit2.
inline constexpr uint64_t kMaxPackedObject = uint64_t{1} << 30;
// A render thread's delta-base cache (PackCache, by bytes; pack-cache-size): an object over a
// quarter of it is not kept, so git/git's largest po files (~1.1 MB) are.
inline constexpr size_t kPackCacheBytes = size_t{32} << 20;

// Applies git's delta `delta` (source size, target size, then copy and insert ops) to `base`,
// replacing *out with the result. False with *error when the delta is malformed: its source size
// is not base's, its target size is over `max_size`, an op reads past the delta or the base, an
// op is the reserved 0, or the ops do not make exactly the target size.
bool ApplyDelta(std::string_view base, std::string_view delta, uint64_t max_size, std::string* out,
                std::string* error);

// An object's bytes as the reader made them, shared with its cache: allocated in one piece with
// their count of owners (make_shared_for_overwrite) and written once by the inflater or the delta,
// never cleared first.
class ObjectBytes {
 public:
  ObjectBytes() = default;
  // `size` bytes, not initialised: the maker writes every one through data() before sharing them.
  static ObjectBytes Make(size_t size);
  char* data() { return data_.get(); }
  std::string_view view() const { return {data_.get(), size_}; }
  size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  std::shared_ptr<char[]> data_;
  size_t size_ = 0;
};

// A packed object: its type (commit, tree, blob or tag) and bytes (shared with the cache).
struct PackedObject {
  git_object_t type = GIT_OBJECT_INVALID;
  ObjectBytes bytes;
};

// A reader's cache of objects by where they are in a pack (pack serial, entry offset), bounded by
// their bytes. One open-addressing table (linear probing, at most 3/4 full) holds each entry
// inline (key, type, referenced bit and the shared bytes), so a look-up is one probe run, with no
// node or list of its own to allocate or follow. Eviction is CLOCK (second chance): a hand sweeps
// the table; an entry read since the hand last passed (Find) has its bit cleared and stays, one
// not read since it was kept goes. So what a later read reused survives a sweep, and what was
// kept and never read again (most of a crawl's objects) goes first, in the hand's order. Keep
// does not set the bit. Not thread-safe (one per reader).
class PackCache {
 public:
  explicit PackCache(size_t limit) : limit_(limit) {}
  PackCache(const PackCache&) = delete;
  PackCache& operator=(const PackCache&) = delete;

  // The object kept at `offset` of pack `pack` (a serial, never 0), marked as read; null when
  // none is. The pointer is good until the next Keep or set_limit.
  const PackedObject* Find(uint32_t pack, uint64_t offset);
  // Keeps a copy of `object` (its bytes shared) unless one is kept there or it is over a quarter
  // of the limit, first evicting what the bytes do not leave room for.
  void Keep(uint32_t pack, uint64_t offset, const PackedObject& object);
  // Bounds the bytes kept (evicting down to it now).
  void set_limit(size_t bytes);
  size_t limit() const { return limit_; }
  size_t bytes() const { return bytes_; }
  size_t count() const { return count_; }

 private:
  struct Slot {
    uint64_t offset = 0;
    uint32_t pack = 0;  // 0: empty
    bool referenced = false;
    PackedObject object;
  };
  size_t Home(uint32_t pack, uint64_t offset) const;
  void Grow();
  void Evict(size_t room);
  void Erase(size_t at);  // backward shift: the probe runs stay unbroken, nothing is marked dead

  std::vector<Slot> slots_;  // a power of two long (or empty)
  size_t count_ = 0;
  size_t bytes_ = 0;
  size_t limit_;
  size_t hand_ = 0;
};

// One thread's reader: the packs it has mapped (by folder, shared by every repository whose
// alternates reach the folder), a libdeflate decompressor and the base cache. Not thread-safe:
// each render thread has its own (ThreadPackReader), so the hot path takes no lock.
class PackReader {
 public:
  enum class Status {
    kFound,   // *out holds the object
    kAbsent,  // in none of the packs (after one look at folders that changed): read it elsewhere
    kFailed,  // in a pack, but it could not be read (*error says why)
  };
  // What a read keeps in the base cache. kChain: every object of the delta chain, the one asked
  // for too (a walk's next read is often the version next to it); kRoot: only the whole object
  // the chain starts from (a snapshot's blobs: other versions of the file are rarely read next,
  // and keeping them pushed out the roots that every version of a file shares).
  enum class Keep { kChain, kRoot };
  explicit PackReader(size_t cache_bytes = kPackCacheBytes);
  ~PackReader();
  PackReader(const PackReader&) = delete;
  PackReader& operator=(const PackReader&) = delete;

  // Object `id` of the repository whose objects folder is `objects` (its packs, then its
  // alternates', as git looks).
  Status Read(const std::string& objects, const git_oid& id, PackedObject* out, std::string* error,
              Keep keep = Keep::kChain);
  // Read, unless the object is stored whole (not as a delta) with more than `larger_than` bytes
  // and is not cached: then only its type and size (*large set, out untouched), from its entry's
  // header, for the caller to inflate it piece by piece. One look-up for what a reader needs to
  // know before it reads (a snapshot's blob: its size goes in the tar header before its bytes).
  Status ReadUnlessLarge(const std::string& objects, const git_oid& id, uint64_t larger_than,
                         PackedObject* out, bool* large, git_object_t* type, uint64_t* size,
                         std::string* error, Keep keep = Keep::kChain);
  // The type and size of object `id` as Read would give them, from entry headers (and a delta's
  // first ops) alone: a cached object's without a look at the pack.
  Status ReadHeader(const std::string& objects, const git_oid& id, git_object_t* type,
                    uint64_t* size, std::string* error);

  // Whether object `id` is in a pack of `objects` or its alternates (an index lookup: nothing is
  // read). False also for a loose object.
  bool Contains(const std::string& objects, const git_oid& id);

  // For abbreviations (abbrev.h): the most leading hex digits `id` shares with another object in
  // a pack of `objects` or its alternates (0: none), from each index's entries on either side of
  // where `id` is or would be. When `id` is in none of the packs, the folders that changed are
  // listed again first (as Contains). *folders: the object folders read (it, then its
  // alternates': ObjectFolders) by their real paths, good until the next call, for the caller to
  // look at their loose objects. False when the reader cannot speak for every pack there (an index
  // it could not map or read, not version 2, not named pack-*.idx; a multi-pack-index).
  bool SharedHexDigits(const std::string& objects, const git_oid& id, int* shared,
                       std::vector<std::string_view>* folders);

  // Bounds the cache to `bytes` (what is over is dropped, in PackCache's order).
  void set_cache_limit(size_t bytes);
  size_t cache_limit() const;

  // For tests and measurements.
  size_t cached_bytes() const;
  uint64_t rescans() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// This thread's reader.
PackReader& ThreadPackReader();
// This thread's reader with its limit brought to pack-cache-size, or null when the reader is off.
PackReader* ThreadReaderIfOn();
// `repo`'s objects folder as the reader names it (GIT_DIR/objects); false when it has none.
bool ObjectsFolder(git_repository* repo, std::string* objects);

// The bytes each thread's reader may cache (pack-cache-size, set by every Site made; a reader
// takes a new value at its next read). 0: ReadPacked answers null, every object goes through
// libgit2.
void SetPackCacheBytes(size_t bytes);

// Object `id` of `type` through this thread's reader, or none (false) when the reader does not
// have it (absent, failed or another type) or is off: the caller then reads it through libgit2,
// which gives its own answer (and error) for it.
ObjectBytes ReadPacked(git_repository* repo, const git_oid& id, git_object_t type,
                       PackReader::Keep keep = PackReader::Keep::kChain);
// ReadPacked unless the object is stored whole with more than `larger_than` bytes
// (PackReader::ReadUnlessLarge): then *large is its size and nothing is read. False when the
// reader does not have it, is off or the object is not of `type`.
bool ReadPackedUnlessLarge(git_repository* repo, const git_oid& id, git_object_t type,
                           uint64_t larger_than, PackReader::Keep keep, ObjectBytes* bytes,
                           std::optional<uint64_t>* large);

// Whether object `id` is in one of `repo`'s packs (or its alternates'), by this thread's reader's
// indexes. False when it is not or the reader is off: the caller asks libgit2 (git_odb_exists),
// which also knows loose objects.
bool PackedHas(git_repository* repo, const git_oid& id);
// The same for many ids of one repository: its objects folder named once.
class PackedLookup {
 public:
  explicit PackedLookup(git_repository* repo);
  bool Has(const git_oid& id);

 private:
  std::string objects_;  // "" when the reader is off or the repository has no folder
};

// Gives `repo`'s object database a backend (ahead of libgit2's own) that answers libgit2's reads
// through this thread's PackReader, but only on a thread inside a PackedReadsScope: elsewhere, and
// for whatever the reader does not have, it passes and libgit2's backends read as before. So a
// caller of git_blob_lookup, git_tree_lookup or git_commit_tree gets the reader's inflating and
// base cache without changing how it reads (the object is copied once into libgit2's buffer and
// kept in libgit2's object cache as any other). False when the backend could not be added.
bool AddPackReaderBackend(git_repository* repo);

// While alive, libgit2's reads on this thread go through the reader (AddPackReaderBackend).
// Nests.
class PackedReadsScope {
 public:
  PackedReadsScope();
  ~PackedReadsScope();
  PackedReadsScope(const PackedReadsScope&) = delete;
  PackedReadsScope& operator=(const PackedReadsScope&) = delete;
};

}  // namespace shellac::gitfrag
