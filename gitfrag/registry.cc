#include "gitfrag/registry.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "gitfrag/abbrev.h"
#include "gitfrag/pack_reader.h"

namespace shellac::gitfrag {

using Clock = std::chrono::steady_clock;

namespace {

// The folders on one of libgit2's search paths (GIT_OPT_GET_SEARCH_PATH), separated by ':' as
// libgit2 separates them (a ':' after a backslash is part of a name).
std::vector<std::string> SearchPath(int level) {
  std::vector<std::string> out;
  git_buf buf = GIT_BUF_INIT;
  if (git_libgit2_opts(GIT_OPT_GET_SEARCH_PATH, level, &buf) != 0) return out;
  const std::string_view all(buf.ptr != nullptr ? buf.ptr : "", buf.size);
  size_t start = 0;
  for (size_t i = 0; i <= all.size(); ++i) {
    if (i < all.size() && (all[i] != ':' || (i > start && all[i - 1] == '\\'))) continue;
    if (i > start) out.emplace_back(all.substr(start, i - start));
    start = i + 1;
  }
  git_buf_dispose(&buf);
  return out;
}

// Whether a config file (absent: none) may set core.attributesFile or core.worktree, or include
// another file that may: a mention of one anywhere, in any case, counts. Its text without blanks,
// lower case, into *text.
bool MayNameAttributes(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  text->clear();
  if (!in) return false;
  std::ostringstream all;
  all << in.rdbuf();
  for (char c : all.str()) {
    if (c != ' ' && c != '\t')
      text->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
  }
  return text->find("attributesfile") != std::string::npos ||
         text->find("include") != std::string::npos || text->find("worktree") != std::string::npos;
}

// FNV-1a, so a number made from files' identities is the same in every run.
uint64_t Hash(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

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
  // The gitattributes sources libgit2 reads for the repository's paths (git_attr_get with
  // GIT_ATTR_CHECK_FILE_THEN_INDEX, libgit2 1.5's attr.c): its info/attributes, the index's
  // .gitattributes (a bare repository has no index file unless a tool wrote one; git would not
  // read it), a work tree's .gitattributes in each folder (a repository with a work tree counts
  // as having sources), core.attributesFile (else the XDG attributes file) and the system's
  // gitattributes. git 2.39 (cgit) reads the same files for a bare repository but the index.
  // attr_files: every file that may hold attributes or name one (the config files), looked at
  // with the refs; attr_fingerprint: their identities then; attributes: 0 when no attribute file
  // existed (and no core.attributesFile was set), else a number made from the identities (and
  // the setting). Written with refs_mu held; attr_mu (held for no I/O) lets routing compare.
  std::mutex attr_mu;
  std::vector<std::string> attr_files;
  std::string attr_fingerprint;
  uint64_t attributes = 0;
  // When routing last found the files as a render had (Attributes, under attr_mu): until the
  // refs interval after it, routing takes the number without looking at the files again (no
  // stat calls on the event loop for every request between two renders).
  int64_t attr_checked_ns = 0;
  bool open() const { return leased > 0 || !idle.empty(); }
};

Registry::Registry(std::vector<conf::Config::Repository> repos, unsigned max_open,
                   std::chrono::nanoseconds refs_interval)
    : repos_(std::move(repos)),
      max_open_(std::max(1u, max_open)),
      refs_interval_(std::max(refs_interval, std::chrono::nanoseconds(1))) {
  EnsureLibgit2();
  for (const std::string& dir : SearchPath(GIT_CONFIG_LEVEL_SYSTEM)) {
    global_attribute_files_.push_back(dir + "/gitattributes");
    global_config_files_.push_back(dir + "/gitconfig");
  }
  for (const std::string& dir : SearchPath(GIT_CONFIG_LEVEL_XDG)) {
    global_attribute_files_.push_back(dir + "/attributes");
    global_config_files_.push_back(dir + "/config");
  }
  for (const std::string& dir : SearchPath(GIT_CONFIG_LEVEL_GLOBAL))
    global_config_files_.push_back(dir + "/.gitconfig");
  for (size_t i = 0; i < repos_.size(); ++i) entries_.push_back(std::make_unique<Entry>());
}

Registry::~Registry() = default;

Registry::Lease::Lease(Lease&& other) noexcept
    : registry_(other.registry_),
      index_(other.index_),
      repo_(std::move(other.repo_)),
      refs_(std::move(other.refs_)),
      abbrev_(other.abbrev_),
      attributes_(other.attributes_),
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

uint64_t Registry::CheckAttributes(Entry& entry, git_repository* repo) const {
  // The files as last found (entry.attr_* are written only here, with refs_mu held): the
  // number stands. The config is read only when one changed (a snapshot costs 30 K
  // instructions).
  if (!entry.attr_files.empty()) {
    std::string fingerprint(entry.attr_fingerprint, 0, entry.attr_fingerprint.find('\n') + 1);
    for (const std::string& f : entry.attr_files) AddFileFingerprint(f, &fingerprint);
    if (fingerprint == entry.attr_fingerprint) return entry.attributes;
  }
  std::vector<std::string> files =
      SourceFiles(git_repository_commondir(repo), git_repository_path(repo));
  // libgit2 reads core.attributesFile when it first looks an attribute up (the XDG file when it
  // is unset); a repository with a work tree reads each folder's .gitattributes.
  bool found = git_repository_workdir(repo) != nullptr;
  std::string setting;
  git_config* raw_config = nullptr;
  if (git_repository_config_snapshot(&raw_config, repo) != 0) {
    found = true;  // libgit2's lookup cannot read it either: let it say so
  } else {
    ConfigPtr config(raw_config);
    git_buf path = GIT_BUF_INIT;
    const int error = git_config_get_path(&path, config.get(), "core.attributesFile");
    if (error == 0) {
      found = true;
      setting.assign(path.ptr, path.size);
      files.push_back(setting);
    } else if (error != GIT_ENOTFOUND) {
      found = true;
    }
    git_buf_dispose(&path);
  }
  std::string fingerprint = setting + '\n';
  const uint64_t attributes = SourcesNumber(files, found, &fingerprint);
  std::lock_guard lock(entry.attr_mu);
  entry.attr_files = std::move(files);
  entry.attr_fingerprint = std::move(fingerprint);
  entry.attributes = attributes;
  return attributes;
}

bool Registry::Attributes(size_t index, uint64_t* out) const {
  if (index >= entries_.size()) return false;
  Entry& entry = *entries_[index];
  const int64_t checked = entry.checked_ns.load(std::memory_order_acquire);
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  if (checked == 0) return FirstAttributes(index, out);
  std::vector<std::string> files;
  std::string fingerprint;
  {
    std::lock_guard lock(entry.attr_mu);
    if (now - std::max(checked, entry.attr_checked_ns) < refs_interval_.count()) {
      *out = entry.attributes;
      return true;
    }
    files = entry.attr_files;
    fingerprint.assign(entry.attr_fingerprint, 0, entry.attr_fingerprint.find('\n') + 1);
  }
  // Older than the interval: the files as they are now against the ones last found.
  for (const std::string& f : files) AddFileFingerprint(f, &fingerprint);
  std::lock_guard lock(entry.attr_mu);
  if (fingerprint != entry.attr_fingerprint) return false;
  entry.attr_checked_ns = std::max(entry.attr_checked_ns, now);
  *out = entry.attributes;
  return true;
}

std::vector<std::string> Registry::SourceFiles(const std::string& common,
                                               const std::string& git_dir) const {
  std::vector<std::string> files = {common + "info/attributes", git_dir + "index"};
  files.insert(files.end(), global_attribute_files_.begin(), global_attribute_files_.end());
  files.push_back(common + "config");
  files.insert(files.end(), global_config_files_.begin(), global_config_files_.end());
  return files;
}

uint64_t Registry::SourcesNumber(const std::vector<std::string>& files, bool found,
                                 std::string* fingerprint) const {
  // The attribute files come first (SourceFiles), then the config files (and the setting's).
  const size_t attribute_files = 2 + global_attribute_files_.size();
  for (size_t i = 0; i < files.size(); ++i) {
    const bool exists = AddFileFingerprint(files[i], fingerprint);
    found = found || (exists && i < attribute_files);
  }
  return found ? Hash(*fingerprint) | 1 : 0;
}

bool Registry::FirstAttributes(size_t index, uint64_t* out) const {
  // A repository whose config says whether it is bare ("bare = true" or "bare = false", as git
  // init writes it; libgit2 gives any repository not bare a work tree), not a linked worktree's
  // (no commondir), and no config file that may set core.attributesFile: the number
  // CheckAttributes will make, from the same files.
  const std::string& path = repos_[index].path;
  struct stat st;
  std::string git_dir = path + "/";
  if (stat((git_dir + "objects").c_str(), &st) != 0) git_dir = path + "/.git/";
  if (stat((git_dir + "objects").c_str(), &st) != 0 ||
      stat((git_dir + "commondir").c_str(), &st) == 0)
    return false;
  std::string text;
  if (MayNameAttributes(git_dir + "config", &text)) return false;
  const bool bare = text.find("bare=true") != std::string::npos;
  const bool work_tree = text.find("bare=false") != std::string::npos;
  if (bare == work_tree) return false;
  for (const std::string& f : global_config_files_) {
    if (MayNameAttributes(f, &text)) return false;
  }
  std::string fingerprint = "\n";
  *out = SourcesNumber(SourceFiles(git_dir, git_dir), work_tree, &fingerprint);
  return true;
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
  // (refs-check-interval); the abbreviation length and the attribute sources with it.
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
      const uint64_t attributes = entry.attributes;
      changed = CheckAttributes(entry, lease.repo_.get()) != attributes || changed;
      // Counted across the process (never 0), so a number names one state of one repository.
      static std::atomic<uint64_t> states{0};
      if (changed) entry.state.store(states.fetch_add(1) + 1, std::memory_order_release);
      entry.checked_ns.store(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
          std::memory_order_release);
    }
    lease.refs_ = entry.refs;
    lease.abbrev_ = entry.abbrev.load();
    lease.attributes_ = entry.attributes;  // written with refs_mu held, as here
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
