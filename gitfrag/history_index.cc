#include "gitfrag/history_index.h"

#include <sys/resource.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
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

constexpr uint32_t kFromBase = UINT32_MAX;  // Commit::source: a commit of the index extended

struct Commit {
  git_oid id;
  git_oid tree;
  int64_t time;
  uint32_t first_parent;  // into the parent list
  uint32_t parent_count;
  uint32_t source;  // the repository it was read from (an index into the list), or kFromBase
  uint32_t base_pos;  // its position in the base index (kFromBase)
};

// Every commit reachable from `repo`'s refs and HEAD that `base` (when set) does not have and
// `seen` does not hold yet, read once each; a commit `base` has ends the walk there (its history
// is in `base` too).
bool ReadCommits(git_repository* repo, uint32_t source, const CommitGraph* base,
                 std::unordered_set<git_oid, OidHash, OidEqual>* seen, std::vector<Commit>* commits,
                 std::vector<git_oid>* parents, std::string* error, const std::atomic<bool>* stop,
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
  while (!pending.empty()) {
    if (stop && stop->load(std::memory_order_relaxed)) {
      *error = "stopped";
      return false;
    }
    const git_oid id = pending.back();
    pending.pop_back();
    if (!seen->insert(id).second) continue;
    if (base != nullptr && base->Find(id) != CommitGraph::kNoPosition) continue;
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
    commits->push_back({id, *git_commit_tree_id(raw), time, static_cast<uint32_t>(parents->size()),
                        n, source, kFromBase});
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
  return Build(std::vector<git_repository*>{repo}, nullptr, memory, image, error, stop, progress);
}

bool HistoryIndex::Build(const std::vector<git_repository*>& repos, const CommitGraph* base,
                         uint64_t memory, std::string* image, std::string* error,
                         const std::atomic<bool>* stop, std::atomic<uint64_t>* progress) {
  std::vector<Commit> commits;
  std::vector<git_oid> parent_ids;
  {
    std::unordered_set<git_oid, OidHash, OidEqual> seen;
    for (uint32_t i = 0; i < repos.size(); ++i)
      if (!ReadCommits(repos[i], i, base, &seen, &commits, &parent_ids, error, stop, progress))
        return false;
  }
  if (base != nullptr) {
    if (commits.empty()) {
      image->clear();  // nothing new
      return true;
    }
    // The base's commits as they are: links from it, filters copied below.
    std::vector<uint32_t> positions;
    for (uint32_t pos = 0; pos < base->size(); ++pos) {
      if (!base->Parents(pos, &positions)) {
        *error = "the index to extend is damaged";
        return false;
      }
      commits.push_back({base->Id(pos), base->Tree(pos), base->Time(pos),
                         static_cast<uint32_t>(parent_ids.size()),
                         static_cast<uint32_t>(positions.size()), kFromBase, pos});
      for (const uint32_t parent : positions) parent_ids.push_back(base->Id(parent));
    }
  }
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
      std::string filter;
      if (c.source == kFromBase) {
        filter = base->Filter(c.base_pos, kNumHashes);
      } else {
        const git_oid* parent_tree = nullptr;
        git_oid first_tree;
        if (c.parent_count > 0) {
          // The first parent's tree, from the commits read (every parent is one of them).
          first_tree = commits[position.at(parent_ids[c.first_parent])].tree;
          parent_tree = &first_tree;
        }
        filter = Filter(repos[c.source], parent_tree, c.tree);
      }
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

std::string HistoryIndex::StoreOf(const std::string& git_dir) {
  std::string objects = git_dir;
  while (!objects.empty() && objects.back() == '/') objects.pop_back();
  objects += "/objects";
  // As git follows alternates (it allows 5 levels); the first line names the store.
  for (int depth = 0; depth < 5; ++depth) {
    std::ifstream alternates(objects + "/info/alternates");
    std::string next;
    for (std::string line; std::getline(alternates, line);) {
      if (line.empty() || line[0] == '#') continue;
      next = line;
      break;
    }
    while (!next.empty() && next.back() == '/') next.pop_back();
    if (next.empty()) break;
    objects = next[0] == '/' ? next : objects + "/" + next;
  }
  char resolved[PATH_MAX];
  if (::realpath(objects.c_str(), resolved) != nullptr) return resolved;
  return objects;
}

namespace {

using Clock = std::chrono::steady_clock;

// The process's indexes, one per object store, and the thread that builds them, one at a time.
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
    if (bytes != budget_)
      for (auto& [store, entry] : entries_) entry.failures = 0;  // a new budget: try again
    budget_ = bytes;
  }

  void SetDelays(std::chrono::milliseconds retry, std::chrono::milliseconds refresh) {
    const std::lock_guard<std::mutex> lock(mu_);
    retry_ = retry;
    refresh_ = refresh;
    for (auto& [store, entry] : entries_) entry.not_before = Clock::now();
  }

  std::shared_ptr<const CommitGraph> For(const std::string& git_dir) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (budget_ == 0 || stop_) return nullptr;
    const std::string& store = StoreLocked(git_dir);
    Entry& entry = entries_[store];
    if (entry.graph) return entry.graph;
    // Not built (yet, or it failed): the repository's refs go into the next build.
    if (!entry.queued && entry.pending.size() < kMaxPending) entry.pending.insert(git_dir);
    QueueLocked(store, &entry);
    return nullptr;
  }

  void Missed(const std::string& git_dir, const CommitGraph* graph) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (budget_ == 0 || stop_) return;
    const std::string& store = StoreLocked(git_dir);
    Entry& entry = entries_[store];
    // Without an index For() queues the first build; a walk that began before the index was
    // refreshed reports what the refresh may have added (a walk of the new one reports again).
    if (!entry.graph || entry.graph.get() != graph) return;
    if (entry.pending.size() < kMaxPending) entry.pending.insert(git_dir);
    QueueLocked(store, &entry);
  }

  bool WaitIdle(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return queue_.empty() && !building_; });
  }

  HistoryIndexMetrics Metrics() {
    const std::lock_guard<std::mutex> lock(mu_);
    HistoryIndexMetrics m = totals_;
    m.budget_bytes = budget_;
    m.stores = 0;
    for (const auto& [store, entry] : entries_) m.stores += entry.graph ? 1 : 0;
    m.repositories = 0;
    for (const auto& [git_dir, store] : stores_) {
      const auto it = entries_.find(store);
      m.repositories += it != entries_.end() && it->second.graph ? 1 : 0;
    }
    m.queued = queue_.size();
    m.building = building_ ? 1 : 0;
    m.building_commits = building_ ? progress_.load(std::memory_order_relaxed) : 0;
    return m;
  }

 private:
  static constexpr size_t kMaxPending = 64;  // repositories whose refs one build reads at most

  struct Entry {
    std::shared_ptr<const CommitGraph> graph;  // null until built (or while every build failed)
    std::unordered_set<std::string> pending;   // git dirs whose refs the next build reads
    bool queued = false;                       // queued or building
    unsigned failures = 0;                     // builds failed in a row
    Clock::time_point not_before{};            // no build starts before this
  };

  // The store of `git_dir`, found once per repository.
  const std::string& StoreLocked(const std::string& git_dir) {
    auto it = stores_.find(git_dir);
    if (it == stores_.end()) it = stores_.emplace(git_dir, HistoryIndex::StoreOf(git_dir)).first;
    return it->second;
  }

  void QueueLocked(const std::string& store, Entry* entry) {
    if (entry->queued || entry->failures >= HistoryIndex::kMaxFailures ||
        Clock::now() < entry->not_before || entry->pending.empty())
      return;
    entry->queued = true;
    queue_.push_back(store);
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    cv_.notify_all();
  }

  void Run() {
    // Background work: the lowest priority, so renders on the same cores go first.
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const std::string store = queue_.front();
      queue_.pop_front();
      Entry& entry = entries_[store];
      // The repositories that asked, and for a first build the store's own repository (the
      // folder that holds it), whose refs reach what its forks borrow.
      std::vector<std::string> sources(entry.pending.begin(), entry.pending.end());
      std::sort(sources.begin(), sources.end());
      entry.pending.clear();
      const std::shared_ptr<const CommitGraph> base = entry.graph;
      const bool retry = entry.failures > 0;
      std::string owner;
      if (!base) {
        const size_t slash = store.rfind('/');
        if (slash != std::string::npos && store.compare(slash, std::string::npos, "/objects") == 0)
          owner = store.substr(0, slash);
      }
      building_ = true;
      progress_ = 0;
      const uint64_t kept = totals_.bytes - (base ? base->bytes() : 0);
      const uint64_t room = budget_ > kept ? budget_ - kept : 0;
      lock.unlock();

      const auto start = Clock::now();
      std::string image, error;
      std::vector<RepositoryPtr> repos;
      std::vector<git_repository*> raw_repos;
      auto open = [&](const std::string& git_dir) {
        git_repository* raw = nullptr;
        if (git_repository_open_ext(&raw, git_dir.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH,
                                    nullptr) != 0)
          return;
        repos.emplace_back(raw);
        raw_repos.push_back(raw);
      };
      for (const std::string& git_dir : sources) open(git_dir);
      if (!owner.empty() && !std::binary_search(sources.begin(), sources.end(), owner)) {
        open(owner);  // when it is a repository (a store may be a bare objects folder)
      }
      bool ok = !raw_repos.empty();
      if (!ok) error = "cannot open the repository";
      if (ok) ok = HistoryIndex::Build(raw_repos, base.get(), room, &image, &error, &stop_flag_,
                                       &progress_);
      std::shared_ptr<const CommitGraph> graph;
      if (ok && !image.empty()) {
        graph = CommitGraph::FromImage(std::move(image), &error);
        ok = graph != nullptr;
      }
      repos.clear();
      const auto end = Clock::now();

      lock.lock();
      building_ = false;
      entry.queued = false;
      if (error == "stopped") {
        cv_.notify_all();
        continue;
      }
      ++totals_.builds;
      if (retry) ++totals_.retries;
      totals_.build_us += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(end - start).count());
      if (ok) {
        entry.failures = 0;
        entry.not_before = end + refresh_;
        if (graph) {
          if (base) {
            ++totals_.refreshes;
            totals_.commits -= base->size();
            totals_.bytes -= base->bytes();
          }
          totals_.commits += graph->size();
          totals_.bytes += graph->bytes();
          entry.graph = std::move(graph);
        }
      } else {
        ++totals_.failed;
        ++entry.failures;
        // 1, 2, 4, ... times the retry delay; the sources are read again then.
        entry.not_before = end + retry_ * (1u << std::min(entry.failures - 1, 10u));
        for (std::string& git_dir : sources) entry.pending.insert(std::move(git_dir));
      }
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;                      // stores
  std::unordered_map<std::string, Entry> entries_;     // by store; kept for the process
  std::unordered_map<std::string, std::string> stores_;  // git dir -> store
  std::thread thread_;
  bool stop_ = false;
  std::atomic<bool> stop_flag_{false};  // stop_, for the build's loop without the lock
  bool building_ = false;
  std::atomic<uint64_t> progress_{0};
  uint64_t budget_ = 0;
  std::chrono::milliseconds retry_{30000}, refresh_{10000};
  HistoryIndexMetrics totals_;
};

Builder& TheBuilder() {
  static Builder builder;
  return builder;
}

}  // namespace

void HistoryIndex::SetMemoryBudget(uint64_t bytes) { TheBuilder().SetBudget(bytes); }

void HistoryIndex::SetDelays(std::chrono::milliseconds retry, std::chrono::milliseconds refresh) {
  TheBuilder().SetDelays(retry, refresh);
}

namespace {

// The repository's git directory without the trailing slash libgit2 gives it.
std::string GitDir(git_repository* repo) {
  const char* dir = git_repository_commondir(repo);
  std::string out = dir == nullptr ? "" : dir;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

std::shared_ptr<const CommitGraph> HistoryIndex::For(git_repository* repo) {
  const std::string dir = GitDir(repo);
  return dir.empty() ? nullptr : TheBuilder().For(dir);
}

void HistoryIndex::Missed(git_repository* repo, const CommitGraph* index) {
  const std::string dir = GitDir(repo);
  if (!dir.empty()) TheBuilder().Missed(dir, index);
}

bool HistoryIndex::WaitIdle(std::chrono::milliseconds limit) {
  return TheBuilder().WaitIdle(limit);
}

HistoryIndexMetrics HistoryIndex::Metrics() { return TheBuilder().Metrics(); }

HistoryIndexMetrics HistoryIndexTotals() { return HistoryIndex::Metrics(); }

}  // namespace shellac::gitfrag
