// archive_pieces: the snapshot archives' blob pieces (gitfrag::ArchivePieceStore) kept in the
// proxy's store, as objects like any other: one per blob id, its pieces the object's segments and
// its text flag a header, kept forever unless evicted, charged to cache-size.
#pragma once

#include <memory>

#include "cache/cache.h"
#include "gitfrag/gitfrag.h"

namespace shellac::proxy {

// Pieces kept in `store`, which must outlive what this makes (the Server clears the process's
// piece store before its store goes).
std::shared_ptr<gitfrag::ArchivePieceStore> MakeArchivePieceStore(cache::Store* store);

}  // namespace shellac::proxy
