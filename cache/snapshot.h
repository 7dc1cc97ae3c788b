// snapshot: the store written to a file and read back (store-snapshot=), so a restarted node
// serves its old hits at once.
//
// File: "SHELLAC-SNAPSHOT" (16 bytes) | format version (4, little-endian) | records | end record.
// A record is its length (4) and one object in its wire form (wire.h: versioned, crc32-checked).
// The end record is 0xffffffff, the number of records (8) and a crc32 of every byte before it (4),
// so a file cut short anywhere, or changed anywhere, is refused as a whole.
//
// Written to FILE.tmp, fsynced and renamed over FILE: a crash while writing leaves the previous
// snapshot. Objects without a wire form (an upstream ESI page with its template) are left out,
// and so are objects that have expired by the time a snapshot is read.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "cache/status.h"
#include "cache/store.h"

namespace shellac::cache {

struct SnapshotStats {
  uint64_t objects = 0;  // written, or read and stored
  uint64_t skipped = 0;  // written: no wire form; read: expired or not storable
  uint64_t bytes = 0;    // the file's size
};

Status WriteSnapshot(const Store& store, const std::string& path, SnapshotStats* stats);

// Reads `path` into `store`. A missing file is an error the caller may ignore (*missing set);
// on any other error nothing is stored.
Status LoadSnapshot(Store* store, const std::string& path, std::chrono::sys_seconds now,
                    SnapshotStats* stats, bool* missing);

}  // namespace shellac::cache
