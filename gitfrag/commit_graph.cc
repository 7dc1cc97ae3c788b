#include "gitfrag/commit_graph.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shellac::gitfrag {

namespace {

constexpr size_t kHash = GIT_OID_RAWSZ;  // SHA-1: the only hash this libgit2 reads
constexpr size_t kCommitData = kHash + 16;
constexpr uint32_t kParentNone = 0x70000000;
constexpr uint32_t kHighBit = 0x80000000;  // 2nd parent: an index into EDGE; in EDGE: the last
constexpr size_t kBloomHeader = 12;
constexpr uint32_t kMaxHashes = 64;  // git writes 7; more is a corrupt header

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t Be64(const unsigned char* p) { return (uint64_t{Be32(p)} << 32) | Be32(p + 4); }
constexpr uint32_t ChunkId(const char (&s)[5]) {
  return (uint32_t(uint8_t(s[0])) << 24) | (uint32_t(uint8_t(s[1])) << 16) |
         (uint32_t(uint8_t(s[2])) << 8) | uint32_t(uint8_t(s[3]));
}

uint32_t RotateLeft(uint32_t value, int count) { return (value << count) | (value >> (32 - count)); }

// 32-bit murmur3 as the commit-graph format specifies it (git's bloom.c, hash version 2: bytes
// taken unsigned; version 1 agrees with it on paths without bytes >= 0x80).
uint32_t Murmur3(uint32_t seed, std::string_view data) {
  constexpr uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  const size_t blocks = data.size() / 4;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  for (size_t i = 0; i < blocks; ++i) {
    const unsigned char* b = bytes + 4 * i;
    uint32_t k = uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) |
                 (uint32_t{b[3]} << 24);
    k *= c1;
    k = RotateLeft(k, 15);
    k *= c2;
    seed ^= k;
    seed = RotateLeft(seed, 13) * 5 + 0xe6546b64;
  }
  const unsigned char* tail = bytes + 4 * blocks;
  uint32_t k1 = 0;
  switch (data.size() & 3) {
    case 3:
      k1 ^= uint32_t{tail[2]} << 16;
      [[fallthrough]];
    case 2:
      k1 ^= uint32_t{tail[1]} << 8;
      [[fallthrough]];
    case 1:
      k1 ^= uint32_t{tail[0]};
      k1 *= c1;
      k1 = RotateLeft(k1, 15);
      k1 *= c2;
      seed ^= k1;
  }
  seed ^= static_cast<uint32_t>(data.size());
  seed ^= seed >> 16;
  seed *= 0x85ebca6b;
  seed ^= seed >> 13;
  seed *= 0xc2b2ae35;
  seed ^= seed >> 16;
  return seed;
}

}  // namespace

// A file mapped read-only. git replaces graph files by renaming new ones over them, never by
// writing in place, so a mapping stays valid after the file is replaced.
struct CommitGraph::Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
  std::string_view bytes() const { return {static_cast<const char*>(addr), size}; }
  static std::unique_ptr<Mapping> Of(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st {};
    std::unique_ptr<Mapping> m;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* addr = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (addr != MAP_FAILED) {
        m = std::make_unique<Mapping>();
        m->addr = addr;
        m->size = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
    return m;
  }
};

struct CommitGraph::Layer {
  uint32_t base = 0;   // commits in the layers below this one
  uint32_t count = 0;  // commits in this one
  const unsigned char* fanout = nullptr;  // 256 cumulative counts by first id byte
  const unsigned char* oids = nullptr;    // count ids, ascending
  const unsigned char* data = nullptr;    // count entries: tree, parent 1, parent 2, date
  const unsigned char* edges = nullptr;   // octopus parents
  size_t edge_count = 0;
  // Bloom filters (null: none, or not usable).
  const unsigned char* bloom_index = nullptr;  // count cumulative ends into bloom_data
  const unsigned char* bloom_data = nullptr;   // after the 12-byte header
  uint32_t bloom_version = 0, num_hashes = 0;
  std::string_view checksum;  // the trailing hash: what a chain names the layer by
};

CommitGraph::CommitGraph() = default;
CommitGraph::~CommitGraph() = default;

bool CommitGraph::AddLayer(std::string_view file, std::string* error) {
  auto fail = [&](const char* why) {
    if (error) *error = why;
    return false;
  };
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  const size_t size = file.size();
  if (size < 8 + 12 + kHash) return fail("file too short");
  if (std::memcmp(bytes, "CGPH", 4) != 0) return fail("not a commit-graph");
  if (bytes[4] != 1) return fail("unknown commit-graph version");
  if (bytes[5] != 1) return fail("not a SHA-1 commit-graph");
  const unsigned chunks = bytes[6];
  const unsigned bases = bytes[7];
  if (bases != layers_.size()) return fail("base count does not match the chain");
  const size_t body_end = size - kHash;
  const size_t table_end = 8 + (size_t{chunks} + 1) * 12;
  if (table_end > body_end) return fail("chunk table past the end");

  auto layer = std::make_unique<Layer>();
  layer->base = total_;
  layer->checksum = file.substr(body_end);
  struct Chunk {
    const unsigned char* at = nullptr;
    size_t size = 0;
  };
  Chunk oidf, oidl, cdat, edge, bidx, bdat, base;
  for (unsigned i = 0; i < chunks; ++i) {
    const unsigned char* entry = bytes + 8 + size_t{i} * 12;
    const uint32_t id = Be32(entry);
    const uint64_t start = Be64(entry + 4), end = Be64(entry + 16);
    if (id == 0) return fail("chunk table ends early");
    if (start < table_end || end < start || end > body_end) return fail("chunk out of bounds");
    Chunk* chunk = nullptr;
    switch (id) {
      case ChunkId("OIDF"): chunk = &oidf; break;
      case ChunkId("OIDL"): chunk = &oidl; break;
      case ChunkId("CDAT"): chunk = &cdat; break;
      case ChunkId("EDGE"): chunk = &edge; break;
      case ChunkId("BIDX"): chunk = &bidx; break;
      case ChunkId("BDAT"): chunk = &bdat; break;
      case ChunkId("BASE"): chunk = &base; break;
      default: continue;  // generation data and chunks git may add: not needed here
    }
    if (chunk->at != nullptr) return fail("chunk repeated");
    chunk->at = bytes + start;
    chunk->size = static_cast<size_t>(end - start);
  }
  {
    const unsigned char* last = bytes + 8 + size_t{chunks} * 12;
    if (Be32(last) != 0 || Be64(last + 4) > body_end) return fail("bad chunk table terminator");
  }
  if (!oidf.at || !oidl.at || !cdat.at) return fail("a required chunk is missing");
  if (oidf.size != 256 * 4) return fail("bad fanout size");
  uint32_t previous = 0;
  for (int i = 0; i < 256; ++i) {
    const uint32_t n = Be32(oidf.at + 4 * i);
    if (n < previous) return fail("fanout not monotonic");
    previous = n;
  }
  const uint32_t count = previous;
  if (uint64_t{total_} + count >= kParentNone) return fail("too many commits");
  if (oidl.size != size_t{count} * kHash) return fail("bad id list size");
  if (cdat.size != size_t{count} * kCommitData) return fail("bad commit data size");
  if (edge.size % 4 != 0) return fail("bad extra edge list size");
  // Ids strictly ascending and each under the fanout bucket of its first byte.
  unsigned bucket = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* id = oidl.at + size_t{i} * kHash;
    if (i > 0 && std::memcmp(id - kHash, id, kHash) >= 0) return fail("ids not sorted");
    while (bucket < 256 && Be32(oidf.at + 4 * bucket) <= i) ++bucket;
    if (bucket != id[0]) return fail("fanout does not match the ids");
  }
  if (bases > 0) {
    if (base.size != size_t{bases} * kHash) return fail("bad base list");
    for (unsigned i = 0; i < bases; ++i)
      if (std::memcmp(base.at + size_t{i} * kHash, layers_[i]->checksum.data(), kHash) != 0)
        return fail("base list does not match the chain");
  }
  layer->count = count;
  layer->fanout = oidf.at;
  layer->oids = oidl.at;
  layer->data = cdat.at;
  layer->edges = edge.at;
  layer->edge_count = edge.size / 4;
  // Bloom filters: only with both chunks, a known hash version and a monotonic index within the
  // data; otherwise this layer's commits simply have none (every answer "maybe").
  if (bidx.at && bdat.at && bidx.size == size_t{count} * 4 && bdat.size >= kBloomHeader) {
    const uint32_t version = Be32(bdat.at), hashes = Be32(bdat.at + 4);
    bool ok = (version == 1 || version == 2) && hashes > 0 && hashes <= kMaxHashes;
    uint32_t end = 0;
    for (uint32_t i = 0; ok && i < count; ++i) {
      const uint32_t next = Be32(bidx.at + 4 * size_t{i});
      ok = next >= end && next <= bdat.size - kBloomHeader;
      end = next;
    }
    if (ok) {
      layer->bloom_index = bidx.at;
      layer->bloom_data = bdat.at + kBloomHeader;
      layer->bloom_version = version;
      layer->num_hashes = hashes;
      has_bloom_ = true;
    }
  }
  total_ += count;
  bytes_ += size;
  layers_.push_back(std::move(layer));
  return true;
}

const CommitGraph::Layer& CommitGraph::LayerOf(uint32_t pos, uint32_t* local) const {
  size_t i = layers_.size() - 1;
  while (i > 0 && pos < layers_[i]->base) --i;
  *local = pos - layers_[i]->base;
  return *layers_[i];
}

uint32_t CommitGraph::Find(const git_oid& id) const {
  for (size_t l = layers_.size(); l-- > 0;) {
    const Layer& layer = *layers_[l];
    const unsigned first = id.id[0];
    uint32_t lo = first == 0 ? 0 : Be32(layer.fanout + 4 * (first - 1));
    uint32_t hi = Be32(layer.fanout + 4 * first);
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      const int c = std::memcmp(layer.oids + size_t{mid} * kHash, id.id, kHash);
      if (c == 0) return layer.base + mid;
      if (c < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
  }
  return kNoPosition;
}

git_oid CommitGraph::Id(uint32_t pos) const {
  uint32_t local;
  const Layer& layer = LayerOf(pos, &local);
  git_oid id;
  std::memcpy(id.id, layer.oids + size_t{local} * kHash, kHash);
  return id;
}

git_oid CommitGraph::Tree(uint32_t pos) const {
  uint32_t local;
  const Layer& layer = LayerOf(pos, &local);
  git_oid id;
  std::memcpy(id.id, layer.data + size_t{local} * kCommitData, kHash);
  return id;
}

int64_t CommitGraph::Time(uint32_t pos) const {
  uint32_t local;
  const Layer& layer = LayerOf(pos, &local);
  const unsigned char* entry = layer.data + size_t{local} * kCommitData;
  return static_cast<int64_t>((uint64_t{Be32(entry + kHash + 8) & 3} << 32) |
                              Be32(entry + kHash + 12));
}

bool CommitGraph::Parents(uint32_t pos, std::vector<uint32_t>* out) const {
  out->clear();
  uint32_t local;
  const Layer& layer = LayerOf(pos, &local);
  // A layer's parents are in it or below it.
  const uint32_t limit = layer.base + layer.count;
  const unsigned char* entry = layer.data + size_t{local} * kCommitData;
  const uint32_t first = Be32(entry + kHash), second = Be32(entry + kHash + 4);
  if (first == kParentNone) return second == kParentNone;
  if (first >= limit) return false;
  out->push_back(first);
  if (second == kParentNone) return true;
  if (!(second & kHighBit)) {
    if (second >= limit) return false;
    out->push_back(second);
    return true;
  }
  for (size_t i = second & ~kHighBit; i < layer.edge_count; ++i) {
    const uint32_t edge = Be32(layer.edges + 4 * i);
    const uint32_t parent = edge & ~kHighBit;
    if (parent >= limit) return false;
    out->push_back(parent);
    if (edge & kHighBit) return true;
  }
  return false;  // the list ran past the chunk
}

CommitGraph::PathKeys CommitGraph::Keys(std::string_view path) const {
  PathKeys keys;
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return keys;
  keys.usable_v1_ = true;
  for (const char c : path)
    if (static_cast<unsigned char>(c) >= 0x80) keys.usable_v1_ = false;
  // The path, then each leading folder: a change under PATH puts all of them in the filter, so
  // any one missing proves no change (as git's revision walk checks them).
  std::string_view key = path;
  while (true) {
    keys.keys_.push_back({Murmur3(0x293ae76f, key), Murmur3(0x7e646e2c, key)});
    const size_t slash = key.rfind('/');
    if (slash == std::string_view::npos || slash == 0) break;
    key = key.substr(0, slash);
  }
  return keys;
}

bool CommitGraph::MaybeChanged(uint32_t pos, const PathKeys& keys) const {
  if (keys.keys_.empty() || pos >= total_) return true;
  uint32_t local;
  const Layer& layer = LayerOf(pos, &local);
  if (layer.bloom_index == nullptr) return true;
  if (layer.bloom_version == 1 && !keys.usable_v1_) return true;
  const uint32_t end = Be32(layer.bloom_index + 4 * size_t{local});
  const uint32_t start = local == 0 ? 0 : Be32(layer.bloom_index + 4 * size_t{local - 1});
  const uint64_t bits = uint64_t{end - start} * 8;  // the index was checked monotonic
  if (bits == 0) return true;  // no filter for this commit
  const unsigned char* filter = layer.bloom_data + start;
  for (const PathKeys::Key& key : keys.keys_) {
    bool present = true;
    for (uint32_t i = 0; i < layer.num_hashes && present; ++i) {
      const uint64_t bit = uint32_t(key.hash0 + i * key.hash1) % bits;
      present = (filter[bit / 8] & (1u << (bit % 8))) != 0;
    }
    if (!present) return false;
  }
  return true;
}

std::string_view CommitGraph::Filter(uint32_t pos, uint32_t num_hashes) const {
  if (pos >= total_) return {};
  uint32_t local;
  const Layer& layer = LayerOf(pos, &local);
  if (layer.bloom_index == nullptr || layer.bloom_version != 2 || layer.num_hashes != num_hashes)
    return {};
  const uint32_t end = Be32(layer.bloom_index + 4 * size_t{local});
  const uint32_t start = local == 0 ? 0 : Be32(layer.bloom_index + 4 * size_t{local - 1});
  return {reinterpret_cast<const char*>(layer.bloom_data) + start, size_t{end - start}};
}

std::shared_ptr<const CommitGraph> CommitGraph::FromImage(std::string image,
                                                          std::string* error) {
  std::shared_ptr<CommitGraph> graph(new CommitGraph());
  graph->image_ = std::move(image);
  if (!graph->AddLayer(graph->image_, error)) return nullptr;
  return graph;
}

void CommitGraph::BloomAdd(std::string_view path, uint32_t num_hashes, unsigned char* filter,
                           size_t len) {
  const uint64_t bits = uint64_t{len} * 8;
  if (bits == 0) return;
  const uint32_t hash0 = Murmur3(0x293ae76f, path), hash1 = Murmur3(0x7e646e2c, path);
  for (uint32_t i = 0; i < num_hashes; ++i) {
    const uint64_t bit = uint32_t(hash0 + i * hash1) % bits;
    filter[bit / 8] |= static_cast<unsigned char>(1u << (bit % 8));
  }
}

std::shared_ptr<const CommitGraph> CommitGraph::FromBytes(
    const std::vector<std::string_view>& layers, std::string* error) {
  if (layers.empty()) return nullptr;
  std::shared_ptr<CommitGraph> graph(new CommitGraph());
  for (const std::string_view bytes : layers)
    if (!graph->AddLayer(bytes, error)) return nullptr;
  return graph;
}

namespace {

// The object folders git looks in for a commit-graph, in its order: the repository's own, then
// those objects/info/alternates names (a path relative to the objects folder, or absolute).
std::vector<std::string> ObjectDirs(std::string git_dir) {
  if (!git_dir.empty() && git_dir.back() != '/') git_dir += '/';
  std::vector<std::string> dirs = {git_dir + "objects"};
  std::ifstream alternates(dirs[0] + "/info/alternates");
  for (std::string line; std::getline(alternates, line);) {
    if (line.empty() || line[0] == '#') continue;
    while (!line.empty() && line.back() == '/') line.pop_back();
    dirs.push_back(line[0] == '/' ? line : dirs[0] + "/" + line);
  }
  return dirs;
}

}  // namespace

std::shared_ptr<CommitGraph> CommitGraph::OpenObjects(const std::string& objects,
                                                      std::string* error) {
  const std::string info = objects + "/info/";
  std::shared_ptr<CommitGraph> graph(new CommitGraph());
  // As git: the single file first, else the chain.
  if (auto single = Mapping::Of(info + "commit-graph")) {
    if (!graph->AddLayer(single->bytes(), error)) return nullptr;
    graph->mappings_.push_back(std::move(single));
    return graph;
  }
  std::ifstream chain(info + "commit-graphs/commit-graph-chain");
  if (!chain) {
    if (error) *error = "no commit-graph";
    return nullptr;
  }
  std::string line;
  while (std::getline(chain, line)) {
    if (line.size() != 2 * kHash) break;
    git_oid name;
    if (git_oid_fromstrn(&name, line.data(), line.size()) != 0) break;
    auto layer = Mapping::Of(info + "commit-graphs/graph-" + line + ".graph");
    if (!layer || layer->size < kHash ||
        std::memcmp(layer->bytes().data() + layer->size - kHash, name.id, kHash) != 0)
      break;
    if (!graph->AddLayer(layer->bytes(), error)) break;
    graph->mappings_.push_back(std::move(layer));
  }
  // As git: the layers that loaded, from the base up, serve; a bad one ends the chain there.
  if (graph->layers_.empty()) {
    if (error && error->empty()) *error = "no usable commit-graph layer";
    return nullptr;
  }
  return graph;
}

std::shared_ptr<const CommitGraph> CommitGraph::Open(const std::string& git_dir,
                                                     std::string* error) {
  // As git: the first object folder with a graph that loads.
  std::string first_error;
  for (const std::string& objects : ObjectDirs(git_dir)) {
    std::string why;
    if (auto graph = OpenObjects(objects, &why)) return graph;
    if (first_error.empty() || first_error == "no commit-graph") first_error = why;
  }
  if (error) *error = first_error;
  return nullptr;
}

std::shared_ptr<const CommitGraph> CommitGraph::ForRepository(git_repository* repo) {
  struct Known {
    std::shared_ptr<const CommitGraph> graph;
    std::string fingerprint;
    std::chrono::steady_clock::time_point checked;
  };
  // One open graph per object folder and fingerprint of its files, shared by every repository
  // that borrows the folder's objects: the forks of a farm all read their base's graph, and each
  // one opening (and checking) it again cost ~1.2 M instructions a fork on 20,000 commits
  // (bench/results/kinds-callgrind-2.md).
  struct Folder {
    std::shared_ptr<const CommitGraph> graph;  // null: no graph there that loads
    std::string fingerprint;
  };
  static std::mutex mu;
  static std::unordered_map<std::string, Known> known;
  static std::unordered_map<std::string, Folder> folders;
  const char* dir = git_repository_commondir(repo);
  if (dir == nullptr) return nullptr;
  const std::string git_dir(dir);
  const auto now = std::chrono::steady_clock::now();
  {
    const std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(git_dir);
    if (it != known.end() && now - it->second.checked < std::chrono::seconds(1))
      return it->second.graph;
  }
  // What identifies the files: git writes a new graph under a new name or renames it over the
  // old one (a new inode), and rewrites the chain file the same way.
  std::string fingerprint;
  std::vector<std::pair<std::string, std::string>> dirs;  // (object folder, its fingerprint)
  bool any = false;
  for (const std::string& objects : ObjectDirs(git_dir)) {
    std::string one;
    for (const char* name : {"/info/commit-graph", "/info/commit-graphs/commit-graph-chain"}) {
      struct stat st {};
      if (::stat((objects + name).c_str(), &st) == 0) {
        any = true;
        one += std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) + ':' +
               std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
      }
      one += ';';
    }
    fingerprint += one;
    dirs.emplace_back(objects, std::move(one));
  }
  {
    const std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(git_dir);
    if (it != known.end() && it->second.fingerprint == fingerprint) {
      it->second.checked = now;
      return it->second.graph;
    }
  }
  // As Open: the first object folder with a graph that loads.
  std::shared_ptr<const CommitGraph> graph;
  for (const auto& [objects, one] : dirs) {
    if (!any || graph) break;
    if (one == ";;") continue;  // neither file there
    {
      const std::lock_guard<std::mutex> lock(mu);
      const auto it = folders.find(objects);
      if (it != folders.end() && it->second.fingerprint == one) {
        graph = it->second.graph;
        continue;
      }
    }
    std::shared_ptr<const CommitGraph> opened = OpenObjects(objects, nullptr);
    const std::lock_guard<std::mutex> lock(mu);
    folders[objects] = Folder{opened, one};
    graph = std::move(opened);
  }
  const std::lock_guard<std::mutex> lock(mu);
  known[git_dir] = Known{graph, fingerprint, now};
  return graph;
}

}  // namespace shellac::gitfrag
