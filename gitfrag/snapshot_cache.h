// snapshot_cache: snapshot archives kept whole, in memory, shared by every repository, fork,
// branch and URL spelling that asks for the same archive.
//
// An archive's bytes depend only on the commit (its tree, and its id and committer time, which
// tar's pax header, tar's mtimes and zip's dates and comment carry), the format, the folder
// prefix and what outside the tree can change it (ArchiveSources): the key is "COMMIT-ID FORMAT
// PREFIX[ SOURCES-DIGEST]". A request opens a reader on the key:
//   - an archive kept whole: read from memory (its length known: sent with Content-Length);
//   - an archive being made for another request: joined; whichever reader is ahead makes the
//     next piece (under the archive's lock), the others read the pieces already made;
//   - otherwise the archive is made, piece by piece as readers ask, and kept once it is done.
// An archive that grows past `max_stored` bytes is not kept: no new reader joins it, and each
// piece is dropped once every reader has passed it. Kept archives are evicted, least recently
// read first, to stay within `budget` bytes. One archive made per key, whatever number of forks
// ask, while it stays kept: a second fork's request reads no tree. An archive whose stream is
// not Shareable() (an export-subst file: it depends on the repository's refs) is made for its
// request alone.
//
// Threads: every method may be called from any thread; readers (BodyStream::Next) run on render
// threads and may block briefly on an archive's lock while another reader makes a piece.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gitfrag/gitfrag.h"

namespace shellac::gitfrag {

class SnapshotCache {
 public:
  SnapshotCache(uint64_t budget, uint64_t max_stored) : budget_(budget), max_stored_(max_stored) {}
  SnapshotCache(const SnapshotCache&) = delete;
  SnapshotCache& operator=(const SnapshotCache&) = delete;

  // Makes the archive when it is neither kept nor being made; null with *error when it fails.
  using Make = std::function<std::unique_ptr<BodyStream>(std::string* error)>;
  // A reader of the archive under `key` (see above). Null with *error when `make` failed.
  std::unique_ptr<BodyStream> Open(const std::string& key, const Make& make, std::string* error);

  // Drops what is kept and sets new bounds (at start; tests).
  void Configure(uint64_t budget, uint64_t max_stored);
  SnapshotCacheStats Stats() const;

  struct Entry;  // snapshot_cache.cc

 private:
  friend class SnapshotReader;
  // A reader's archive is done (or failed, or too large): keep it, or let it go.
  void Finished(const std::shared_ptr<Entry>& entry);
  void Detach(const std::shared_ptr<Entry>& entry);  // too large: no new reader joins it

  mutable std::mutex mu_;
  uint64_t budget_, max_stored_;
  uint64_t bytes_ = 0;
  std::list<std::shared_ptr<Entry>> lru_;  // kept, most recently read first
  std::unordered_map<std::string, std::list<std::shared_ptr<Entry>>::iterator> kept_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> making_;
  SnapshotCacheStats counts_;
};

// The process's snapshot cache (ConfigureSnapshotCache, gitfrag.h, sets its bounds).
SnapshotCache& Snapshots();

}  // namespace shellac::gitfrag
