// Registry: the configured repositories, opened lazily and kept open.
//
// A git_repository handle is used by one thread at a time (libgit2 handles are not safe for
// concurrent use); each repository keeps a small pool of idle handles, so concurrent renders of
// one repository each get their own while pack indexes stay mapped (libgit2 shares mapped packs
// between handles of the same path). At most `max_open` repositories hold handles; opening one
// more closes the least recently used idle one.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conf/config.h"
#include "gitfrag/git.h"
#include "gitfrag/refs.h"

namespace shellac::gitfrag {

class Registry {
 public:
  // `refs_interval`: how long a ref index (and the abbreviation length) is used before the refs
  // on disk are looked at again (refs-check-interval).
  Registry(std::vector<conf::Config::Repository> repos, unsigned max_open,
           std::chrono::nanoseconds refs_interval = std::chrono::seconds(1));
  ~Registry();

  // Exclusive use of one open handle of a repository, returned to the pool at destruction.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    git_repository* repo() const { return repo_.get(); }
    // The ref index current at acquisition (rebuilt when refs changed, checked at most once a
    // refs-check-interval, 1 s by default).
    const RefIndex& refs() const { return *refs_; }
    // git's default abbreviation length for this repository (abbrev.h), from its packed object
    // count, recounted when objects/pack changes (checked with the refs).
    int abbrev() const { return abbrev_; }
    // The gitattributes sources git's diff machinery would read for this repository, as found at
    // acquisition (checked with the refs): 0 when there is none, so every path's diff attribute
    // is unspecified and a render need not look one up; else a number that changes when one of
    // them, or a config file that may name one, changes (see Registry::Entry::attributes).
    uint64_t attributes() const { return attributes_; }
    // A number no other state of any repository of this process has, for these refs, this
    // abbreviation length and these attribute sources together (see Registry::State).
    uint64_t state() const { return state_; }
    explicit operator bool() const { return repo_ != nullptr; }

   private:
    friend class Registry;
    Registry* registry_ = nullptr;
    size_t index_ = 0;
    RepositoryPtr repo_;
    std::shared_ptr<const RefIndex> refs_;
    int abbrev_ = 7;
    uint64_t attributes_ = 0;
    uint64_t state_ = 0;
  };

  // Opens (or reuses) a handle. On failure returns an empty lease and sets *error.
  Lease Acquire(size_t index, std::string* error);

  const std::vector<conf::Config::Repository>& repos() const { return repos_; }
  // The abbreviation length of a repository (abbrev.h), for routing to put in cache keys: the one
  // last computed (lock-free), or, before the repository's first render, counted from its pack
  // indexes' headers once (a directory read and 1 KiB per pack; no libgit2).
  int Abbrev(size_t index) const;
  size_t open_count() const;  // repositories holding at least one handle (tests)
  // The Lease::attributes() a render of repository `index` would get, for routing to put in the
  // patch's and rawdiff's keys (their text depends on it): the one a render found (or this call
  // confirmed) less than the refs interval ago, or else, if the sources' files on disk are as that
  // render found them, its one (a few stat calls, no libgit2; confirmed for another interval);
  // before the first render, the one its files give
  // (FirstAttributes: stat calls, the config files read). False when none of these holds (a
  // file changed since, a config that may name an attributes file): the caller must not key an
  // output by it.
  bool Attributes(size_t index, uint64_t* out) const;
  // What a render of repository `index` would read its refs, abbreviation length and attribute
  // sources from, as a number that changes whenever one does (Lease::state), if a render looked at
  // the files on disk less than the refs interval ago (as a render that starts now would take
  // them); else 0. Lock-free and without I/O, for an event loop.
  uint64_t State(size_t index) const;

 private:
  struct Entry;
  void Release(size_t index, RepositoryPtr repo);
  void CloseLeastRecentlyUsed();  // with mu_ held
  // Attributes() before the repository's first render: the number CheckAttributes will make,
  // from the files alone (stat calls, the config files read as text), when its config files
  // cannot name an attributes file or a work tree elsewhere; else false.
  bool FirstAttributes(size_t index, uint64_t* out) const;
  // The files CheckAttributes looks at for a repository (folders end in '/'): the attribute
  // files first, then the config files.
  std::vector<std::string> SourceFiles(const std::string& common, const std::string& git_dir) const;
  // Appends the identities of `files` (SourceFiles' order) to *fingerprint; the number for them:
  // 0 when none of the attribute files exists and not `found`.
  uint64_t SourcesNumber(const std::vector<std::string>& files, bool found,
                         std::string* fingerprint) const;
  // Looks at the attribute sources of `repo` (entry `index`, with its refs_mu held) and records
  // what it found; returns the number for them (Lease::attributes).
  uint64_t CheckAttributes(Entry& entry, git_repository* repo) const;

  const std::vector<conf::Config::Repository> repos_;
  const unsigned max_open_;
  size_t open_ = 0;  // entries that hold a handle (Entry::open()), under mu_
  const std::chrono::nanoseconds refs_interval_;
  // The files outside any repository that libgit2 reads attributes from (the system's
  // gitattributes, the XDG attributes file) and core.attributesFile from (the system's, XDG and
  // global config), in the folders of its search paths as at construction.
  std::vector<std::string> global_attribute_files_, global_config_files_;
  mutable std::mutex mu_;  // guards every Entry's handle lists and the LRU clock
  std::vector<std::unique_ptr<Entry>> entries_;
  uint64_t clock_ = 0;
};

}  // namespace shellac::gitfrag
