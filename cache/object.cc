#include "cache/object.h"

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include "base/text.h"
#include "cache/deflate.h"

namespace shellac::cache {
namespace {

// ---- header encoding ---------------------------------------------------------------------------
//
// One entry per header; the first byte says which form follows:
//   0x80 | i     whole header kWholeHeaders[i], nothing follows
//   i (1..127)   name kNames[i - 1], then varint value length and the value
//   0            varint name length, name, varint value length, value
// Both tables are part of the stored format only in memory (objects never outlive the process), so
// they may change freely between versions.

constexpr std::string_view kNames[] = {
    "Content-Type",
    "Content-Language",
    "Content-Disposition",
    "Last-Modified",
    "ETag",
    "Cache-Control",
    "Expires",
    "Location",
    "Vary",
    "Link",
    "X-Content-Type-Options",
    "Access-Control-Allow-Origin",
    "Content-Security-Policy",
    "X-Frame-Options",
    "Referrer-Policy",
    "Refresh",
    "Age",
    "Surrogate-Control",
};

struct WholeHeader {
  std::string_view name;
  std::string_view value;
};
constexpr WholeHeader kWholeHeaders[] = {
    {"Content-Type", "text/html; charset=UTF-8"},
    {"Content-Type", "text/html; charset=utf-8"},
    {"Content-Type", "text/html"},
    {"Content-Type", "text/plain; charset=UTF-8"},
    {"Content-Type", "text/plain; charset=utf-8"},
    {"Content-Type", "text/plain"},
    {"Content-Type", "text/css"},
    {"Content-Type", "application/javascript"},
    {"Content-Type", "application/json"},
    {"Content-Type", "application/octet-stream"},
    {"Content-Type", "application/atom+xml"},
    {"Content-Type", "image/png"},
    {"Content-Type", "image/svg+xml"},
    {"X-Content-Type-Options", "nosniff"},
    {"Vary", "Accept-Encoding"},
};
static_assert(std::size(kNames) < 128 && std::size(kWholeHeaders) < 128);

using base::EqualsIgnoreCase;

int WholeHeaderIndex(const Header& h) {
  for (size_t i = 0; i < std::size(kWholeHeaders); ++i) {
    if (h.value == kWholeHeaders[i].value && EqualsIgnoreCase(h.name, kWholeHeaders[i].name)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int NameIndex(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (EqualsIgnoreCase(name, kNames[i])) return static_cast<int>(i);
  }
  return -1;
}

// ---- varints (LEB128) --------------------------------------------------------------------------

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Reads bytes this file wrote: no bounds to check.
const char* GetVarint(const char* p, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t byte = static_cast<uint8_t>(*p++);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  *v = result;
  return p;
}

char* Put32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) *p++ = static_cast<char>(v >> (8 * i));
  return p;
}

const char* Get32(const char* p, uint32_t* v) {
  uint32_t result = 0;
  for (int i = 3; i >= 0; --i) result = (result << 8) | static_cast<uint8_t>(p[i]);
  *v = result;
  return p + 4;
}

size_t EncodedHeaderSize(const Header& h) {
  if (WholeHeaderIndex(h) >= 0) return 1;
  size_t n = 1 + VarintSize(h.value.size()) + h.value.size();
  if (NameIndex(h.name) < 0) n += VarintSize(h.name.size()) + h.name.size();
  return n;
}

char* PutHeader(char* p, const Header& h) {
  if (int whole = WholeHeaderIndex(h); whole >= 0) {
    *p++ = static_cast<char>(0x80 | whole);
    return p;
  }
  if (int name = NameIndex(h.name); name >= 0) {
    *p++ = static_cast<char>(name + 1);
  } else {
    *p++ = 0;
    p = PutVarint(p, h.name.size());
    std::memcpy(p, h.name.data(), h.name.size());
    p += h.name.size();
  }
  p = PutVarint(p, h.value.size());
  if (!h.value.empty()) std::memcpy(p, h.value.data(), h.value.size());
  return p + h.value.size();
}

// 16-bit durations: 0..32767 exact seconds; 32768 + h for h whole hours (rounded down, so a ttl
// never grows); 0xffff forever. Long ttls are whole days or years in practice.
constexpr uint16_t kDurationForever = 0xffff;
constexpr uint32_t kExactSeconds = 0x8000;

uint16_t EncodeDuration(std::chrono::seconds s) {
  if (s >= Object::kForever) return kDurationForever;
  if (s.count() <= 0) return 0;
  if (s.count() < kExactSeconds) return static_cast<uint16_t>(s.count());
  int64_t hours = std::min<int64_t>(s.count() / 3600, kDurationForever - 1 - kExactSeconds);
  return static_cast<uint16_t>(kExactSeconds + hours);
}

int64_t DecodeDuration(uint16_t code) {
  if (code == kDurationForever) return Object::kForever.count();
  if (code < kExactSeconds) return code;
  return static_cast<int64_t>(code - kExactSeconds) * 3600;
}

// The segment table's entry for one segment: crc32, then length and deflate length as varints.
char* PutEntry(char* p, const SegmentView& s) {
  p = Put32(p, s.crc);
  p = PutVarint(p, s.length);
  return PutVarint(p, s.deflate.size());
}

size_t EntrySize(const SegmentView& s) {
  return 4 + VarintSize(s.length) + VarintSize(s.deflate.size());
}

const char* SkipEntry(const char* p) {
  uint64_t ignored = 0;
  p = GetVarint(p + 4, &ignored);
  return GetVarint(p, &ignored);
}

}  // namespace

// The tail's ESI part; 8-aligned because the allocation is 16-aligned and Object is 24 bytes.
struct Object::TemplateSlot {
  std::shared_ptr<const esi::Template> handle;
  uint64_t bytes;
};

// ---- building ----------------------------------------------------------------------------------

ObjectRef Object::Create(std::string_view key, const ObjectSpec& spec, Status* status) {
  static_assert(sizeof(Object) == 20, "keep the fixed part of an object small");
  static_assert(sizeof(TemplateSlot) == kTemplateSlotSize && alignof(TemplateSlot) <= 8 &&
                kTemplateOffset % alignof(TemplateSlot) == 0 && kTemplateOffset >= sizeof(Object));
  *status = Status::Ok();
  if (key.empty() || key.size() > kMaxKeyLength) {
    *status = Status::Error("cache key must be 1..65535 bytes");
    return {};
  }
  if (spec.status < 100 || spec.status > 999) {
    *status = Status::Error("status must be 100..999");
    return {};
  }
  size_t headers_length = 0;
  for (const Header& h : spec.headers) headers_length += EncodedHeaderSize(h);
  if (headers_length > kMaxHeadersLength) {
    *status = Status::Error("kept headers exceed 64 KiB");
    return {};
  }

  // Segment table. One segment: its entry alone. Otherwise: varint table length (so the body can be
  // found without decoding the entries), varint count, body crc (when more than one), entries.
  const size_t count = spec.body.size();
  const bool single = count == 1;
  size_t entries_length = 0;
  uint64_t deflate_total = 0;
  uint32_t body_crc = 0;
  for (const SegmentView& s : spec.body) {
    entries_length += EntrySize(s);
    deflate_total += s.deflate.size();
    body_crc = CombineCrc(body_crc, s.crc, s.length);  // a length's operator kept per thread
  }
  const size_t table_length = single ? 0 : VarintSize(count) + (count > 1 ? 4 : 0) + entries_length;
  const size_t table_size = single ? entries_length : VarintSize(table_length) + table_length;

  const bool has_template = spec.esi_template != nullptr;
  const size_t size = (has_template ? kTemplateOffset + kTemplateSlotSize : sizeof(Object)) +
                      key.size() + headers_length + table_size + deflate_total;

  void* memory = ::operator new(size, std::nothrow);
  if (memory == nullptr) {
    *status = Status::Error("out of memory for a cache object");
    return {};
  }
  Object* object = new (memory) Object();
  object->stored_at_ = static_cast<uint32_t>(
      std::clamp<int64_t>(spec.stored_at.time_since_epoch().count(), 0, 0xfffffffe));
  object->ttl_ = EncodeDuration(spec.ttl);
  object->grace_ = EncodeDuration(spec.grace);
  object->status_ = static_cast<uint16_t>(spec.status);
  object->key_length_ = static_cast<uint16_t>(key.size());
  object->headers_length_ = static_cast<uint16_t>(headers_length);
  object->layout_ =
      static_cast<uint8_t>((has_template ? kHasTemplate : 0) | (single ? kSingleSegment : 0));

  char* p = reinterpret_cast<char*>(object) + sizeof(Object);
  if (has_template) {
    p = reinterpret_cast<char*>(object) + kTemplateOffset;
    new (p) TemplateSlot{spec.esi_template, spec.esi_template_bytes};
    p += sizeof(TemplateSlot);
  }
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  for (const Header& h : spec.headers) p = PutHeader(p, h);
  if (!single) {
    p = PutVarint(p, table_length);
    p = PutVarint(p, count);
    if (count > 1) p = Put32(p, body_crc);
  }
  for (const SegmentView& s : spec.body) p = PutEntry(p, s);
  for (const SegmentView& s : spec.body) {
    if (!s.deflate.empty()) std::memcpy(p, s.deflate.data(), s.deflate.size());
    p += s.deflate.size();
  }
  return ObjectRef(object);
}

void Object::Destroy(const Object* object) {
  Object* mutable_object = const_cast<Object*>(object);
  if (object->layout_ & kHasTemplate) {
    std::launder(
        reinterpret_cast<TemplateSlot*>(reinterpret_cast<char*>(mutable_object) + kTemplateOffset))
        ->~TemplateSlot();
  }
  mutable_object->~Object();
  ::operator delete(static_cast<void*>(mutable_object));
}

// ---- reading -----------------------------------------------------------------------------------

const Object::TemplateSlot* Object::template_slot() const {
  if (!(layout_ & kHasTemplate)) return nullptr;
  return std::launder(
      reinterpret_cast<const TemplateSlot*>(reinterpret_cast<const char*>(this) + kTemplateOffset));
}

const esi::Template* Object::esi_template() const {
  const TemplateSlot* slot = template_slot();
  return slot == nullptr ? nullptr : slot->handle.get();
}

std::shared_ptr<const esi::Template> Object::shared_esi_template() const {
  const TemplateSlot* slot = template_slot();
  return slot == nullptr ? nullptr : slot->handle;
}

std::chrono::seconds Object::ttl() const {
  return std::chrono::seconds(DecodeDuration(ttl_));
}
std::chrono::seconds Object::grace() const {
  return std::chrono::seconds(DecodeDuration(grace_));
}

Freshness Object::FreshnessAt(std::chrono::sys_seconds now) const {
  if (ttl_ == kDurationForever) return Freshness::kFresh;
  int64_t age = now.time_since_epoch().count() - static_cast<int64_t>(stored_at_);
  int64_t ttl = DecodeDuration(ttl_);
  if (age < ttl) return Freshness::kFresh;
  if (grace_ == kDurationForever || age < ttl + DecodeDuration(grace_)) return Freshness::kStale;
  return Freshness::kExpired;
}

Object::HeaderList Object::headers() const {
  return HeaderList(headers_begin(), headers_begin() + headers_length_);
}

std::optional<std::string_view> Object::header(std::string_view name) const {
  for (const Header& h : headers()) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return std::nullopt;
}

Object::SegmentList Object::segments() const {
  const char* p = table_begin();
  if (layout_ & kSingleSegment) return SegmentList(p, SkipEntry(p), 1);
  uint64_t table_length = 0;
  p = GetVarint(p, &table_length);
  const char* body = p + table_length;
  uint64_t count = 0;
  p = GetVarint(p, &count);
  if (count > 1) p += 4;  // the body crc
  return SegmentList(p, body, static_cast<size_t>(count));
}

uint32_t Object::body_crc() const {
  const char* p = table_begin();
  uint32_t crc = 0;
  if (layout_ & kSingleSegment) {
    Get32(p, &crc);  // the only segment's
    return crc;
  }
  uint64_t ignored = 0;
  p = GetVarint(p, &ignored);
  uint64_t count = 0;
  p = GetVarint(p, &count);
  if (count > 1) Get32(p, &crc);
  return crc;
}

uint64_t Object::body_length() const {
  uint64_t n = 0;
  for (const SegmentView& s : segments()) n += s.length;
  return n;
}

uint64_t Object::deflate_bytes() const {
  uint64_t n = 0;
  for (const SegmentView& s : segments()) n += s.deflate.size();
  return n;
}

ETag Object::etag() const {
  ETag tag;
  static constexpr char kHex[] = "0123456789abcdef";
  char* p = tag.text.data();
  *p++ = '"';
  uint32_t crc = body_crc();
  for (int shift = 28; shift >= 0; shift -= 4) *p++ = kHex[(crc >> shift) & 0xf];
  *p++ = '-';
  uint64_t length = body_length();
  int shift = 60;
  while (shift > 0 && ((length >> shift) & 0xf) == 0) shift -= 4;
  for (; shift >= 0; shift -= 4) *p++ = kHex[(length >> shift) & 0xf];
  *p++ = '"';
  tag.size = static_cast<uint8_t>(p - tag.text.data());
  return tag;
}

size_t Object::charge() const {
  // glibc: a chunk in use spans its usable size plus one 8-byte size word (tcmalloc, which the
  // shellac binary links, keeps no word: 8 bytes an object counted that it does not use). Asking
  // the allocator instead of estimating counts its rounding exactly (and is cheap).
  size_t bytes = malloc_usable_size(const_cast<Object*>(this)) + sizeof(size_t);
  if (const TemplateSlot* slot = template_slot()) bytes += slot->bytes;
  return bytes;
}

// ---- iterators ---------------------------------------------------------------------------------

Object::HeaderIterator::HeaderIterator(const char* at, const char* end) : at_(at), end_(end) {
  Decode();
}

Object::HeaderIterator& Object::HeaderIterator::operator++() {
  at_ = next_;
  Decode();
  return *this;
}

void Object::HeaderIterator::Decode() {
  if (at_ == end_) return;
  const char* p = at_;
  uint8_t form = static_cast<uint8_t>(*p++);
  if (form & 0x80) {
    const WholeHeader& whole = kWholeHeaders[form & 0x7f];
    current_ = Header{whole.name, whole.value};
    next_ = p;
    return;
  }
  uint64_t n = 0;
  if (form == 0) {
    p = GetVarint(p, &n);
    current_.name = std::string_view(p, n);
    p += n;
  } else {
    current_.name = kNames[form - 1];
  }
  p = GetVarint(p, &n);
  current_.value = std::string_view(p, n);
  next_ = p + n;
}

Object::SegmentIterator::SegmentIterator(const char* table, const char* body, size_t remaining)
    : table_(table), body_(body), remaining_(remaining) {
  Decode();
}

Object::SegmentIterator& Object::SegmentIterator::operator++() {
  --remaining_;
  Decode();
  return *this;
}

void Object::SegmentIterator::Decode() {
  if (remaining_ == 0) return;
  uint32_t crc = 0;
  uint64_t length = 0;
  uint64_t deflate_length = 0;
  table_ = Get32(table_, &crc);
  table_ = GetVarint(table_, &length);
  table_ = GetVarint(table_, &deflate_length);
  current_ = SegmentView{std::string_view(body_, deflate_length), crc, static_cast<uint32_t>(length)};
  body_ += deflate_length;
}

}  // namespace shellac::cache
