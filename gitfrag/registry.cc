#include "gitfrag/registry.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>

#include "gitfrag/abbrev.h"
#include "gitfrag/pack_reader.h"

namespace shellac::gitfrag {

using Clock = std::chrono::steady_clock;

struct Registry::Entry {
  std::vector<RepositoryPtr> idle;
  unsigned leased = 0;
  uint64_t last_used = 0;
  // The ref index and how fresh it is; refs_mu serialises rebuilds (outside mu_).
  std::mutex refs_mu;
  std::shared_ptr<const RefIndex> refs;
  std::string fingerprint;
  Clock::time_point checked{};
  // objects/pack's inode and modification time when the abbreviation length was computed (a
  // new or removed pack renames or unlinks a file there).
  std::string pack_fingerprint;
  std::atomic<int> abbrev{0};
  // Lease::state of the refs and abbreviation length above, and when (steady clock, ns) the files
  // were last looked at: written under refs_mu, read without it (State).
  std::atomic<uint64_t> state{0};
  std::atomic<int64_t> checked_ns{0};
  bool open() const { return leased > 0 || !idle.empty(); }
};

Registry::Registry(std::vector<conf::Config::Repository> repos, unsigned max_open,
                   std::chrono::nanoseconds refs_interval)
    : repos_(std::move(repos)),
      max_open_(std::max(1u, max_open)),
      refs_interval_(std::max(refs_interval, std::chrono::nanoseconds(1))) {
  EnsureLibgit2();
  for (size_t i = 0; i < repos_.size(); ++i) entries_.push_back(std::make_unique<Entry>());
}

Registry::~Registry() = default;

Registry::Lease::Lease(Lease&& other) noexcept
    : registry_(other.registry_),
      index_(other.index_),
      repo_(std::move(other.repo_)),
      refs_(std::move(other.refs_)),
      abbrev_(other.abbrev_),
      state_(other.state_) {
  other.registry_ = nullptr;
}

Registry::Lease::~Lease() {
  if (registry_ != nullptr && repo_) registry_->Release(index_, std::move(repo_));
}

int Registry::Abbrev(size_t index) const {
  if (index >= entries_.size()) return 0;
  Entry& entry = *entries_[index];
  int abbrev = entry.abbrev.load(std::memory_order_relaxed);
  if (abbrev != 0) return abbrev;
  // A bare repository, or a work tree's .git folder.
  std::string git_dir = repos_[index].path;
  struct stat st;
  if (stat((git_dir + "/objects").c_str(), &st) != 0) git_dir += "/.git";
  abbrev = AbbrevLength(PackedObjectCount(git_dir));
  int unknown = 0;
  // A render that computed it meanwhile wins: it also recorded objects/pack's fingerprint.
  if (!entry.abbrev.compare_exchange_strong(unknown, abbrev)) return unknown;
  return abbrev;
}

size_t Registry::open_count() const {
  std::lock_guard lock(mu_);
  return open_;
}

void Registry::CloseLeastRecentlyUsed() {
  // Only past the limit is every repository looked at (the count is kept as they open and close).
  while (open_ > max_open_) {
    Entry* victim = nullptr;
    for (const auto& e : entries_) {
      if (e->leased == 0 && !e->idle.empty() &&
          (victim == nullptr || e->last_used < victim->last_used))
        victim = e.get();
    }
    if (victim == nullptr) return;  // every open repository is in use; they close when released
    victim->idle.clear();
    --open_;
  }
}

Registry::Lease Registry::Acquire(size_t index, std::string* error) {
  Lease lease;
  if (index >= entries_.size()) {
    *error = "no such repository";
    return lease;
  }
  Entry& entry = *entries_[index];
  {
    std::lock_guard lock(mu_);
    entry.last_used = ++clock_;
    if (!entry.open()) ++open_;
    if (!entry.idle.empty()) {
      lease.repo_ = std::move(entry.idle.back());
      entry.idle.pop_back();
    }
    ++entry.leased;  // counted as open from here, so LRU closing never picks it
    CloseLeastRecentlyUsed();
  }
  lease.registry_ = this;
  lease.index_ = index;
  if (!lease.repo_) {
    git_repository* raw = nullptr;
    // NO_SEARCH: the configured path is the repository; never walk up into a parent's.
    if (git_repository_open_ext(&raw, repos_[index].path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH,
                                nullptr) != 0) {
      const git_error* e = git_error_last();
      *error = "cannot open repository: " + std::string(e ? e->message : "unknown error");
      std::lock_guard lock(mu_);
      --entry.leased;
      if (!entry.open()) --open_;
      lease.registry_ = nullptr;
      return lease;
    }
    lease.repo_.reset(raw);
    // The commit diff's reads go through the own pack reader (without it, libgit2's as before).
    AddPackReaderBackend(raw);
  }

  // Ref index: rebuilt only when the refs on disk changed, looked at no more than once an interval
  // (refs-check-interval).
  {
    std::lock_guard lock(entry.refs_mu);
    const auto now = Clock::now();
    if (!entry.refs || now - entry.checked >= refs_interval_) {
      entry.checked = now;
      const std::string git_dir = git_repository_path(lease.repo_.get());
      std::string fingerprint = RefsFingerprint(git_dir);
      bool changed = entry.state.load(std::memory_order_relaxed) == 0;
      if (!entry.refs || fingerprint != entry.fingerprint) {
        changed = true;
        git_repository* repo = lease.repo_.get();
        auto peel = [repo](const git_oid& id) -> std::optional<RefIndex::Peeled> {
          git_object* raw = nullptr;
          if (git_object_lookup(&raw, repo, &id, GIT_OBJECT_ANY) != 0) return std::nullopt;
          ObjectPtr object(raw);
          const bool annotated = git_object_type(raw) == GIT_OBJECT_TAG;
          git_object* peeled = nullptr;
          if (git_object_peel(&peeled, raw, GIT_OBJECT_COMMIT) != 0) {
            return RefIndex::Peeled{id, annotated};
          }
          ObjectPtr peeled_owner(peeled);
          return RefIndex::Peeled{*git_object_id(peeled), annotated};
        };
        entry.refs = RefIndex::Build(git_dir, peel);
        entry.fingerprint = std::move(fingerprint);
      }
      struct stat st;
      std::string pack_fingerprint = "-";
      if (stat((git_dir + "objects/pack").c_str(), &st) == 0)
        pack_fingerprint = std::to_string(st.st_ino) + ":" + std::to_string(st.st_mtim.tv_sec) +
                           "." + std::to_string(st.st_mtim.tv_nsec);
      if (entry.abbrev.load() == 0 || pack_fingerprint != entry.pack_fingerprint) {
        const int abbrev = AbbrevLength(PackedObjectCount(git_dir));
        changed = changed || abbrev != entry.abbrev.load();
        entry.abbrev.store(abbrev);
        entry.pack_fingerprint = std::move(pack_fingerprint);
      }
      // Counted across the process (never 0), so a number names one state of one repository.
      static std::atomic<uint64_t> states{0};
      if (changed) entry.state.store(states.fetch_add(1) + 1, std::memory_order_release);
      entry.checked_ns.store(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
          std::memory_order_release);
    }
    lease.refs_ = entry.refs;
    lease.abbrev_ = entry.abbrev.load();
    lease.state_ = entry.state.load(std::memory_order_relaxed);
  }
  return lease;
}

uint64_t Registry::State(size_t index) const {
  if (index >= entries_.size()) return 0;
  const Entry& entry = *entries_[index];
  const int64_t checked = entry.checked_ns.load(std::memory_order_acquire);
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  if (checked == 0 || now - checked >= refs_interval_.count()) return 0;
  return entry.state.load(std::memory_order_acquire);
}

void Registry::Release(size_t index, RepositoryPtr repo) {
  std::lock_guard lock(mu_);
  Entry& entry = *entries_[index];
  --entry.leased;
  entry.idle.push_back(std::move(repo));
  CloseLeastRecentlyUsed();
}

}  // namespace shellac::gitfrag
