// cache: the contract of the object store, the one header other modules include.
//
// What the rest of shellac may use (each header below says how):
//   Store, LookupResult     cache/store.h      key -> immutable Object under a memory budget
//   Object, ObjectRef, ...  cache/object.h     a stored response: kept headers, deflate segments, ESI
//   Key rules               cache/key.h        the cache key of a request (cache-key rules)
//   Freshness, Policy       cache/freshness.h  storable?, ttl and grace from a response's headers
//   SegmentEncoder, ...     cache/deflate.h    encode once; stitch gzip or inflate on delivery
//   Status                  cache/status.h     the error value of cache/ calls
//   EncodeObject, ...       cache/wire.h       an object as versioned, checksummed bytes
//   WriteSnapshot, ...      cache/snapshot.h   the store written to a file and read back
//   SharedTier              cache/l2.h         objects shared between nodes through memcached
// The rest of cache/ (hash, index, ghost, object_access) is internal: only cache/ and its white-box
// tests include it (tools/check_borders.py fails the build otherwise).
#pragma once

#include "cache/deflate.h"
#include "cache/freshness.h"
#include "cache/key.h"
#include "cache/l2.h"
#include "cache/object.h"
#include "cache/status.h"
#include "cache/snapshot.h"
#include "cache/store.h"
#include "cache/wire.h"
