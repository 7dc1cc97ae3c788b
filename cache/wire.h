// wire: a stored object as bytes that leave the process (a store snapshot, the shared tier) and
// come back. The in-memory layout (object.h) changes freely between versions; this form is
// versioned and checksummed, and reading it checks every length, so a damaged, truncated or foreign
// value is refused, never turned into an object.
//
//   "SHLW" | version (1 byte) | crc32 of the payload (4, little-endian) | payload length (4) | payload
//   payload: key, status, stored_at, ttl, grace, headers, segments (lengths as LEB128 varints)
//
// Objects holding an ESI template (a parsed upstream page) have no wire form: the template is
// compiled code, not bytes: EncodeObject() returns false for them.
#pragma once

#include <string>
#include <string_view>

#include "cache/object.h"
#include "cache/status.h"

namespace shellac::cache {

inline constexpr unsigned char kWireVersion = 1;

// Appends `object`'s wire form to *out. False (nothing appended) for an object with a template.
bool EncodeObject(const Object& object, std::string* out);

// The object `bytes` hold (the whole of `bytes`, nothing before or after). A null ref with
// *status saying why for a value that is not exactly one well-formed object of this version.
ObjectRef DecodeObject(std::string_view bytes, Status* status);

}  // namespace shellac::cache
