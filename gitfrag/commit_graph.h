// CommitGraph: git's commit-graph file (objects/info/commit-graph, or the split chain under
// objects/info/commit-graphs/), read in place from a read-only mapping. It answers, without reading
// a commit object, a commit's parents, committer date and root tree, and, from the changed-path
// Bloom filters git writes with `--changed-paths`, "PATH certainly did not change between this
// commit and its first parent".
//
// Everything is checked when a file is opened (header, chunk table, chunk sizes, fanout, id order,
// Bloom index); a file that fails is not used at all (its Bloom data alone, when only that is
// bad), so a caller falls back to reading objects. Answers never trust a position read from the
// file without a bound check: a corrupt parent gives `false`, never a crash.
//
// Immutable once built: one CommitGraph is shared by every render thread (ForRepository keeps one
// per repository and opens a new one when git rewrites the file).
#pragma once

#include <git2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shellac::gitfrag {

class CommitGraph {
 public:
  static constexpr uint32_t kNoPosition = UINT32_MAX;

  // The graph of the repository whose git directory is `git_dir` (objects/info/commit-graph, or
  // else the chain; as git, in the first of its object folders and then its alternates' that has
  // one), or null when none is there or usable (`error`, when set, says why).
  static std::shared_ptr<const CommitGraph> Open(const std::string& git_dir, std::string* error);
  // Open's result for `repo`, remembered per repository; the files are looked at again (stat) at
  // most once a second, and a rewritten graph is opened anew. Null: no usable graph.
  static std::shared_ptr<const CommitGraph> ForRepository(git_repository* repo);

  // Layers from bytes (base first), for tests and the fuzzer: the bytes must outlive the graph.
  static std::shared_ptr<const CommitGraph> FromBytes(const std::vector<std::string_view>& layers,
                                                      std::string* error);
  // One layer from an image the graph keeps (history_index.h builds one in memory).
  static std::shared_ptr<const CommitGraph> FromImage(std::string image, std::string* error);

  // For a writer: sets `path`'s bits in a Bloom filter of `len` bytes, with hash version 2 and
  // `num_hashes` hashes (git's bloom.c add_key_to_filter).
  static void BloomAdd(std::string_view path, uint32_t num_hashes, unsigned char* filter,
                       size_t len);

  ~CommitGraph();
  CommitGraph(const CommitGraph&) = delete;
  CommitGraph& operator=(const CommitGraph&) = delete;

  // Commits in the graph (all layers); positions are 0 .. size()-1.
  uint32_t size() const { return total_; }
  // The position of `id`, or kNoPosition when the graph does not have it.
  uint32_t Find(const git_oid& id) const;
  git_oid Id(uint32_t pos) const;
  git_oid Tree(uint32_t pos) const;
  // Committer date, seconds since the epoch (34 bits, as git stores it).
  int64_t Time(uint32_t pos) const;
  // Parents in order, as positions. False (and `out` unspecified) when the file's entry is bad.
  bool Parents(uint32_t pos, std::vector<uint32_t>* out) const;

  // A path's Bloom keys: the path and each of its leading folders, hashed as git does for each
  // layer's settings. Made once per walk.
  class PathKeys {
   public:
    PathKeys() = default;
   private:
    friend class CommitGraph;
    struct Key {
      uint32_t hash0 = 0, hash1 = 0;  // the two seeded murmur3 hashes; hash i = hash0 + i * hash1
    };
    // Hash versions 1 and 2 agree on paths of bytes < 0x80; version 1 hashes a byte >= 0x80 as
    // the writer's `char` was signed or not, so such a path gets "maybe" from version 1 filters.
    std::vector<Key> keys_;
    bool usable_v1_ = false;
  };
  PathKeys Keys(std::string_view path) const;
  // False when the commit at `pos` certainly has the same entry at the path as its first parent
  // (for a root commit: certainly no entry there); true when it may differ, including when the
  // commit has no filter, the filter is truncated or the path cannot be hashed reliably.
  bool MaybeChanged(uint32_t pos, const PathKeys& keys) const;
  // Whether any layer carries Bloom filters.
  bool has_bloom() const { return has_bloom_; }
  // The Bloom filter bytes of the commit at `pos` when its layer has filters of hash version 2
  // with `num_hashes` hashes (history_index.h's settings), else empty (none, or other settings).
  std::string_view Filter(uint32_t pos, uint32_t num_hashes) const;
  // Layers (1 for a single file).
  size_t layers() const { return layers_.size(); }
  // The bytes of all layers (mapped, or held for an image).
  uint64_t bytes() const { return bytes_; }

 private:
  struct Layer;
  struct Mapping;
  CommitGraph();
  static std::shared_ptr<CommitGraph> OpenObjects(const std::string& objects, std::string* error);
  bool AddLayer(std::string_view bytes, std::string* error);
  const Layer& LayerOf(uint32_t pos, uint32_t* local) const;

  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::unique_ptr<Mapping>> mappings_;
  std::string image_;  // FromImage's bytes
  uint32_t total_ = 0;
  uint64_t bytes_ = 0;
  bool has_bloom_ = false;
};

}  // namespace shellac::gitfrag
