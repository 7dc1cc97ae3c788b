// libFuzzer target: the pack files a plain page streams a blob from (gitfrag/blob_stream.h): the
// input read as a version-2 pack index (PackIndex::FromBytes, as a mapped .idx), as a pack entry's
// header (ParsePackEntryHeader) and as a loose object's inflated header (ParseLooseHeader).
// Checked on every input:
// - no crash, hang or undefined behaviour (no read outside the input);
// - an index that is accepted answers within its bounds: each of its ids is looked up (found or
//   not, as its order allows) twice with the same answer, and a found offset comes from its tables;
// - a pack entry header that parses has a known type and a length within the input, at most 10
//   bytes (4 + 7 * 9 = 67 bits hold any 64-bit size);
// - a loose header that parses ends at a NUL within the input, names a known type and its size
//   is the decimal written there.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/check.h"
#include "gitfrag/blob_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shellac::gitfrag;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto index = PackIndex::FromBytes(bytes, &error);
  if (!index) {
    FUZZ_CHECK(!error.empty());
  } else {
    const uint32_t n = index->size() < 4096 ? index->size() : 4096;
    for (uint32_t pos = 0; pos < n; ++pos) {
      const git_oid id = index->Id(pos);
      const std::optional<uint64_t> offset = index->Find(id);
      FUZZ_CHECK(offset == index->Find(id));
    }
    git_oid absent;
    for (auto& b : absent.id) b = 0xff;
    FUZZ_CHECK(index->Find(absent) == index->Find(absent));
  }

  PackEntryHeader entry;
  if (ParsePackEntryHeader(bytes, &entry)) {
    FUZZ_CHECK(entry.length >= 1 && entry.length <= bytes.size() && entry.length <= 10);
    FUZZ_CHECK(entry.type >= 1 && entry.type <= 7 && entry.type != 5);
  }

  std::string_view type;
  uint64_t declared = 0;
  size_t length = 0;
  if (ParseLooseHeader(bytes, &type, &declared, &length)) {
    FUZZ_CHECK(length <= bytes.size() && bytes[length - 1] == '\0');
    FUZZ_CHECK(type == "blob" || type == "tree" || type == "commit" || type == "tag");
    const size_t space = type.size();
    FUZZ_CHECK(bytes.substr(space + 1, length - space - 2) == std::to_string(declared));
  }
  return 0;
}
