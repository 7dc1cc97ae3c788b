// part_store: the repository-neutral parts of page bodies (gitfrag::PartStore: the plain page's
// file bytes, one per blob id) kept in the proxy's store, as objects like any other: the body
// compressed once, its meta text a header, kept for fragment-ttl (forever unless evicted), charged
// to cache-size. resident.cc keeps what a render read and makes the page of the part's segments.
#pragma once

#include <memory>
#include <string_view>

#include "cache/cache.h"
#include "gitfrag/gitfrag.h"

namespace shellac::proxy {

// Parts found in `store`, which must outlive what this makes (the Server clears the process's
// part store before its store goes).
std::shared_ptr<gitfrag::PartStore> MakePartStore(cache::Store* store);

// The object a PartStore::Find answer keeps alive.
const cache::ObjectRef& PartObject(const std::shared_ptr<const void>& part);

// The header of a part's object that holds its meta text.
inline constexpr std::string_view kPartMetaHeader = "X-Part-Meta";

}  // namespace shellac::proxy
