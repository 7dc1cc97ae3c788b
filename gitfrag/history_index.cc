#include "gitfrag/history_index.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gitfrag/gitfrag.h"
#include "gitfrag/git.h"
#include "gitfrag/memo.h"
#include "gitfrag/tree_diff.h"

namespace shellac::gitfrag {

namespace {

constexpr size_t kHash = GIT_OID_RAWSZ;
constexpr uint32_t kParentNone = 0x70000000;
constexpr uint32_t kHighBit = 0x80000000;
// git's Bloom settings (bloom.h): 7 hashes, 10 bits per path, at most 512 paths per commit.
constexpr uint32_t kNumHashes = 7, kBitsPerEntry = 10, kMaxChangedPaths = 512;

void PutBe32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, 4);
}
void PutBe64(std::string* out, uint64_t v) {
  PutBe32(out, static_cast<uint32_t>(v >> 32));
  PutBe32(out, static_cast<uint32_t>(v));
}

struct Commit {
  git_oid id;
  git_oid tree;
  int64_t time;
  uint32_t first_parent;  // into the parent list
  uint32_t parent_count;
};

// Every commit reachable from the refs and HEAD, read once each.
bool ReadCommits(git_repository* repo, std::vector<Commit>* commits, std::vector<git_oid>* parents,
                 std::string* error, const std::atomic<bool>* stop,
                 std::atomic<uint64_t>* progress) {
  std::vector<git_oid> pending;
  auto push_peeled = [&](git_reference* ref) {
    git_object* raw = nullptr;
    if (git_reference_peel(&raw, ref, GIT_OBJECT_COMMIT) == 0) {
      const ObjectPtr object(raw);
      pending.push_back(*git_object_id(raw));
    }
  };
  {
    git_reference_iterator* raw = nullptr;
    if (git_reference_iterator_new(&raw, repo) != 0) {
      *error = "cannot list the refs";
      return false;
    }
    const base::Owned<git_reference_iterator_free> it(raw);
    git_reference* ref = nullptr;
    while (git_reference_next(&ref, it.get()) == 0) {
      const ReferencePtr owned(ref);
      push_peeled(ref);
    }
    git_reference* head = nullptr;
    if (git_repository_head(&head, repo) == 0) {
      const ReferencePtr owned(head);
      push_peeled(head);
    }
  }
  std::unordered_set<git_oid, OidHash, OidEqual> seen;
  while (!pending.empty()) {
    if (stop && stop->load(std::memory_order_relaxed)) {
      *error = "stopped";
      return false;
    }
    const git_oid id = pending.back();
    pending.pop_back();
    if (!seen.insert(id).second) continue;
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo, &id) != 0) {
      *error = "cannot read commit " + std::string(git_oid_tostr_s(&id));
      return false;
    }
    const CommitPtr commit(raw);
    const int64_t time = git_commit_time(raw);
    if (time < 0 || time >= (int64_t{1} << 34)) {
      *error = "a commit date the commit-graph format cannot hold";
      return false;
    }
    const unsigned n = git_commit_parentcount(raw);
    commits->push_back({id, *git_commit_tree_id(raw), time, static_cast<uint32_t>(parents->size()), n});
    for (unsigned i = 0; i < n; ++i) {
      parents->push_back(*git_commit_parent_id(raw, i));
      pending.push_back(*git_commit_parent_id(raw, i));
    }
    if (progress) progress->fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// The Bloom filter of the diff between `parent_tree` (null id: none) and `tree`; empty when a
// tree cannot be read (no filter: "maybe").
std::string Filter(git_repository* repo, const git_oid* parent_tree, const git_oid& tree) {
  TreePtr old_tree, new_tree;
  git_tree* raw = nullptr;
  if (git_tree_lookup(&raw, repo, &tree) != 0) return {};
  new_tree.reset(raw);
  if (parent_tree != nullptr) {
    if (git_tree_lookup(&raw, repo, parent_tree) != 0) return {};
    old_tree.reset(raw);
  }
  std::vector<TreeChange> changes;
  std::string reason;
  if (!DiffTrees(repo, old_tree.get(), new_tree.get(), &changes, &reason)) return {};
  if (changes.size() > kMaxChangedPaths) return std::string(1, '\xff');
  // Each changed path and its leading folders, as git adds them.
  std::unordered_set<std::string_view> keys;
  for (const TreeChange& change : changes) {
    std::string_view path = change.path;
    while (!path.empty()) {
      keys.insert(path);
      const size_t slash = path.rfind('/');
      path = path.substr(0, slash == std::string_view::npos ? 0 : slash);
    }
  }
  if (keys.size() > kMaxChangedPaths) return std::string(1, '\xff');
  size_t len = (keys.size() * kBitsPerEntry + 7) / 8;
  if (len == 0) len = 1;  // no change: a filter of zeros ("certainly not" for every path)
  std::string filter(len, '\0');
  for (const std::string_view key : keys)
    CommitGraph::BloomAdd(key, kNumHashes, reinterpret_cast<unsigned char*>(filter.data()), len);
  return filter;
}

}  // namespace

bool HistoryIndex::Build(git_repository* repo, uint64_t memory, std::string* image,
                         std::string* error, const std::atomic<bool>* stop,
                         std::atomic<uint64_t>* progress) {
  std::vector<Commit> commits;
  std::vector<git_oid> parent_ids;
  if (!ReadCommits(repo, &commits, &parent_ids, error, stop, progress)) return false;
  std::sort(commits.begin(), commits.end(), [](const Commit& a, const Commit& b) {
    return std::memcmp(a.id.id, b.id.id, kHash) < 0;
  });
  const uint32_t n = static_cast<uint32_t>(commits.size());
  if (n >= kParentNone) {
    *error = "too many commits";
    return false;
  }
  std::unordered_map<git_oid, uint32_t, OidHash, OidEqual> position;
  position.reserve(n);
  for (uint32_t i = 0; i < n; ++i) position.emplace(commits[i].id, i);

  // Commit data and the octopus edges.
  std::string cdat, edges;
  cdat.reserve(size_t{n} * (kHash + 16));
  for (const Commit& c : commits) {
    cdat.append(reinterpret_cast<const char*>(c.tree.id), kHash);
    auto pos = [&](uint32_t i) { return position.at(parent_ids[c.first_parent + i]); };
    PutBe32(&cdat, c.parent_count > 0 ? pos(0) : kParentNone);
    if (c.parent_count <= 2) {
      PutBe32(&cdat, c.parent_count == 2 ? pos(1) : kParentNone);
    } else {
      PutBe32(&cdat, kHighBit | static_cast<uint32_t>(edges.size() / 4));
      for (uint32_t i = 1; i < c.parent_count; ++i)
        PutBe32(&edges, pos(i) | (i + 1 == c.parent_count ? kHighBit : 0));
    }
    PutBe32(&cdat, static_cast<uint32_t>(static_cast<uint64_t>(c.time) >> 32) & 3);
    PutBe32(&cdat, static_cast<uint32_t>(c.time));
  }
  const unsigned chunks = edges.empty() ? 5 : 6;
  const uint64_t links = 8 + (chunks + 1) * 12 + 256 * 4 + uint64_t{n} * kHash + cdat.size() +
                         edges.size() + uint64_t{n} * 4 + 12 + kHash;
  if (links > memory) {
    *error = "the index would pass history-index-memory";
    return false;
  }
  // Bloom filters while they fit; past the budget, none (length 0: "maybe").
  std::string bidx, bdat;
  PutBe32(&bdat, 2);
  PutBe32(&bdat, kNumHashes);
  PutBe32(&bdat, kBitsPerEntry);
  bool full = false;
  for (const Commit& c : commits) {
    if (stop && stop->load(std::memory_order_relaxed)) {
      *error = "stopped";
      return false;
    }
    if (!full) {
      const git_oid* parent_tree = nullptr;
      git_oid first_tree;
      if (c.parent_count > 0) {
        // The first parent's tree, from the commits read (every parent is one of them).
        first_tree = commits[position.at(parent_ids[c.first_parent])].tree;
        parent_tree = &first_tree;
      }
      const std::string filter = Filter(repo, parent_tree, c.tree);
      if (links + bdat.size() - 12 + filter.size() > memory)
        full = true;
      else
        bdat += filter;
    }
    PutBe32(&bidx, static_cast<uint32_t>(bdat.size() - 12));
  }

  // The file: header, chunk table, chunks, a (zero) trailer.
  std::string fanout;
  {
    uint32_t count = 0;
    size_t i = 0;
    for (unsigned b = 0; b < 256; ++b) {
      while (i < n && commits[i].id.id[0] == b) ++i, ++count;
      PutBe32(&fanout, count);
    }
  }
  std::string oidl;
  oidl.reserve(size_t{n} * kHash);
  for (const Commit& c : commits) oidl.append(reinterpret_cast<const char*>(c.id.id), kHash);
  struct Chunk {
    const char* id;
    const std::string* body;
  };
  std::vector<Chunk> list = {{"OIDF", &fanout}, {"OIDL", &oidl}, {"CDAT", &cdat}};
  if (!edges.empty()) list.push_back({"EDGE", &edges});
  list.push_back({"BIDX", &bidx});
  list.push_back({"BDAT", &bdat});
  image->clear();
  image->append("CGPH");
  image->push_back(1);  // version
  image->push_back(1);  // SHA-1
  image->push_back(static_cast<char>(list.size()));
  image->push_back(0);  // no base layers
  uint64_t offset = 8 + (list.size() + 1) * 12;
  for (const Chunk& chunk : list) {
    image->append(chunk.id, 4);
    PutBe64(image, offset);
    offset += chunk.body->size();
  }
  image->append(4, '\0');
  PutBe64(image, offset);
  for (const Chunk& chunk : list) image->append(*chunk.body);
  image->append(kHash, '\0');
  return true;
}

namespace {

// The process's indexes and the thread that builds them, one at a time.
class Builder {
 public:
  ~Builder() {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      stop_flag_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void SetBudget(uint64_t bytes) {
    const std::lock_guard<std::mutex> lock(mu_);
    budget_ = bytes;
  }

  std::shared_ptr<const CommitGraph> For(const std::string& git_dir) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (budget_ == 0 || stop_) return nullptr;
    auto [it, added] = entries_.try_emplace(git_dir);
    if (!added) return it->second.graph;
    queue_.push_back(git_dir);
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    cv_.notify_all();
    return nullptr;
  }

  bool WaitIdle(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return queue_.empty() && !building_; });
  }

  HistoryIndexMetrics Metrics() {
    const std::lock_guard<std::mutex> lock(mu_);
    HistoryIndexMetrics m = totals_;
    m.budget_bytes = budget_;
    m.queued = queue_.size();
    m.building = building_ ? 1 : 0;
    m.building_commits = building_ ? progress_.load(std::memory_order_relaxed) : 0;
    return m;
  }

 private:
  struct Entry {
    std::shared_ptr<const CommitGraph> graph;  // null until built (or when it failed)
  };

  void Run() {
    // Background work: the lowest priority, so renders on the same cores go first.
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const std::string git_dir = queue_.front();
      queue_.pop_front();
      building_ = true;
      progress_ = 0;
      const uint64_t room = budget_ > totals_.bytes ? budget_ - totals_.bytes : 0;
      lock.unlock();
      const auto start = std::chrono::steady_clock::now();
      std::string image, error;
      std::shared_ptr<const CommitGraph> graph;
      git_repository* raw = nullptr;
      if (git_repository_open(&raw, git_dir.c_str()) == 0) {
        const RepositoryPtr repo(raw);
        if (HistoryIndex::Build(repo.get(), room, &image, &error, &stop_flag_, &progress_))
          graph = CommitGraph::FromImage(std::move(image), &error);
      }
      const auto took = std::chrono::steady_clock::now() - start;
      lock.lock();
      building_ = false;
      ++totals_.builds;
      totals_.build_us += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(took).count());
      if (graph) {
        totals_.repositories += 1;
        totals_.commits += graph->size();
        totals_.bytes += graph->bytes();
        entries_[git_dir].graph = std::move(graph);
      } else {
        ++totals_.failed;
      }
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_map<std::string, Entry> entries_;  // by git directory; kept for the process
  std::thread thread_;
  bool stop_ = false;
  std::atomic<bool> stop_flag_{false};  // stop_, for the build's loop without the lock
  bool building_ = false;
  std::atomic<uint64_t> progress_{0};
  uint64_t budget_ = 0;
  HistoryIndexMetrics totals_;
};

Builder& TheBuilder() {
  static Builder builder;
  return builder;
}

}  // namespace

void HistoryIndex::SetMemoryBudget(uint64_t bytes) { TheBuilder().SetBudget(bytes); }

std::shared_ptr<const CommitGraph> HistoryIndex::For(git_repository* repo) {
  const char* dir = git_repository_commondir(repo);
  return dir == nullptr ? nullptr : TheBuilder().For(dir);
}

bool HistoryIndex::WaitIdle(std::chrono::milliseconds limit) {
  return TheBuilder().WaitIdle(limit);
}

HistoryIndexMetrics HistoryIndex::Metrics() { return TheBuilder().Metrics(); }

HistoryIndexMetrics HistoryIndexTotals() { return HistoryIndex::Metrics(); }

}  // namespace shellac::gitfrag
