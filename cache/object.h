// object: one stored response, immutable once built, shared by every request that serves it.
//
// Layout. A fragment store holds millions of objects of a few KB, and the per-object overhead
// beyond key and body bytes must stay under 64 bytes on average (store and index included). So an
// object is one heap allocation, sized exactly:
//
//   [Object, 20 bytes: refcount, times, status, lengths, flags]
//   [ESI template handle + its size, 28 bytes with alignment; only when the body is ESI]
//   [key] [kept headers, encoded] [segment table] [deflate bytes of all segments]
//
// - Header names and common whole headers ("Content-Type: text/html; charset=UTF-8") are one byte
//   each from a static table; other values are stored as given.
// - The segment table holds per segment its crc32 and, as varints, its uncompressed and deflate
//   lengths; a one-segment body (any fragment under 64 KiB of text) needs nothing else: 8 bytes.
// - ttl and grace take 16 bits each: exact seconds below 9 hours, whole hours (rounded down) above,
//   up to ~3.7 years, or forever.
// - The reference count is inside the object: ObjectRef is 8 bytes and needs no separate control
//   block (std::shared_ptr would cost ~32 bytes per object on top of the malloc chunk).
//
// Threads: an Object is immutable after Create(); any thread may read it while it holds an
// ObjectRef. The store keeps a few private bookkeeping bits in it, guarded by its shard's mutex.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "cache/deflate.h"
#include "cache/status.h"

namespace shellac::esi {
class Template;  // a compiled ESI template; defined by esi/, opaque here
}

namespace shellac::cache {

class Object;
namespace internal {
struct ObjectAccess;  // the store's access to its bookkeeping bits (store.cc)
}

// Shared ownership of an immutable Object, like std::shared_ptr<const Object> but 8 bytes, with the
// count inside the object. The store holds one reference per stored object; eviction drops it, and
// the object is freed when the last request streaming it lets go. Copies may cross threads.
class ObjectRef {
 public:
  ObjectRef() = default;
  ObjectRef(const ObjectRef& other);
  ObjectRef(ObjectRef&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  ObjectRef& operator=(ObjectRef other) noexcept {
    std::swap(object_, other.object_);
    return *this;
  }
  ~ObjectRef();

  const Object* get() const { return object_; }
  const Object* operator->() const { return object_; }
  const Object& operator*() const { return *object_; }
  explicit operator bool() const { return object_ != nullptr; }
  void reset() { ObjectRef().swap(*this); }
  void swap(ObjectRef& other) noexcept { std::swap(object_, other.object_); }
  // Number of references (tests and diagnostics; racy by nature).
  uint32_t use_count() const;

 private:
  friend class Object;
  friend struct internal::ObjectAccess;
  explicit ObjectRef(const Object* adopted) : object_(adopted) {}  // takes over one reference

  const Object* object_ = nullptr;
};

struct Header {
  std::string_view name;
  std::string_view value;
};

// What a stored object is built from. Views only: Create() copies everything it keeps.
struct ObjectSpec {
  int status = 200;                 // 100..999
  std::span<const Header> headers;  // the ones worth keeping, in order; names are case-insensitive
  std::chrono::sys_seconds stored_at{};
  // Fresh for `ttl` after stored_at, then served stale (grace, stale-if-error) for `grace`.
  // >= Object::kForever means forever; above 32767 s both are rounded down to whole hours.
  std::chrono::seconds ttl{0};
  std::chrono::seconds grace{0};
  std::span<const SegmentView> body;  // one body's segments, in order (see deflate.h)
  std::shared_ptr<const esi::Template> esi_template;  // set when the body is an ESI template
  size_t esi_template_bytes = 0;  // memory the template holds; charged to the store's budget
};

// Where an object stands at a given time.
enum class Freshness {
  kFresh,    // within ttl
  kStale,    // past ttl, within grace: may be served while one refresh runs, or when upstream fails
  kExpired,  // past ttl + grace: not to be served
};

// A strong validator for the stored body: crc32 and length of the identity bytes, e.g.
// "1c291ca3-2a5f". Byte-identical bodies get the same ETag across refetches: 304s survive them.
struct ETag {
  std::array<char, 28> text{};
  uint8_t size = 0;
  std::string_view view() const { return {text.data(), size}; }
};

class Object {
 public:
  static constexpr std::chrono::seconds kForever{0xffffffffu};  // and longer
  static constexpr size_t kMaxKeyLength = 0xffff;
  static constexpr size_t kMaxHeadersLength = 0xffff;  // encoded bytes

  // Builds an object holding copies of `key` and everything in `spec`. On failure (limits, out of
  // memory) returns a null ref and sets *status.
  static ObjectRef Create(std::string_view key, const ObjectSpec& spec, Status* status);

  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  std::string_view key() const { return {key_begin(), key_length_}; }
  int status() const { return status_; }

  // Kept headers, in the order given to Create(). Names come back in canonical case for table names
  // and as given otherwise.
  class HeaderIterator;
  class HeaderList {
   public:
    HeaderList(const char* begin, const char* end) : begin_(begin), end_(end) {}
    HeaderIterator begin() const;
    HeaderIterator end() const;

   private:
    const char* begin_;
    const char* end_;
  };
  HeaderList headers() const;
  // First header named `name` (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const;

  std::chrono::sys_seconds stored_at() const {
    return std::chrono::sys_seconds(std::chrono::seconds(stored_at_));
  }
  std::chrono::seconds ttl() const;  // as stored (see ObjectSpec::ttl); kForever for forever
  std::chrono::seconds grace() const;
  Freshness FreshnessAt(std::chrono::sys_seconds now) const;

  // The body's segments, in order; views into this object (valid while a reference is held).
  class SegmentIterator;
  class SegmentList {
   public:
    SegmentList(const char* table, const char* body, size_t count)
        : table_(table), body_(body), count_(count) {}
    SegmentIterator begin() const;
    SegmentIterator end() const;
    size_t size() const { return count_; }

   private:
    const char* table_;  // first segment's entry
    const char* body_;   // first segment's deflate bytes
    size_t count_;
  };
  SegmentList segments() const;
  uint32_t body_crc() const;       // crc32 of the whole identity body
  uint64_t body_length() const;    // identity bytes
  uint64_t deflate_bytes() const;  // stored (compressed) body bytes
  size_t header_bytes() const { return headers_length_; }  // kept headers, as encoded

  // The compiled ESI template, or null when the body is not ESI. Lives as long as the object.
  const esi::Template* esi_template() const;
  std::shared_ptr<const esi::Template> shared_esi_template() const;

  ETag etag() const;

  // Bytes this object costs the store: its heap chunk as the allocator sizes it, plus the template.
  size_t charge() const;

 private:
  friend class ObjectRef;
  friend struct internal::ObjectAccess;

  enum Layout : uint8_t { kHasTemplate = 1, kSingleSegment = 2 };
  struct TemplateSlot;                           // the tail's template part: shared_ptr + size
  static constexpr size_t kTemplateOffset = 24;  // 8-aligned, right after the fixed part
  static constexpr size_t kTemplateSlotSize = 24;

  Object() = default;
  ~Object() = default;
  static void Destroy(const Object* object);

  const char* key_begin() const {
    return reinterpret_cast<const char*>(this) +
           ((layout_ & kHasTemplate) ? kTemplateOffset + kTemplateSlotSize : sizeof(Object));
  }
  const TemplateSlot* template_slot() const;
  const char* headers_begin() const { return key_begin() + key_length_; }
  const char* table_begin() const { return headers_begin() + headers_length_; }

  // 20 bytes. stored_at is unix seconds (good until 2106); ttl and grace are 16-bit durations.
  mutable std::atomic<uint32_t> refs_{1};
  uint32_t stored_at_ = 0;
  uint16_t ttl_ = 0;
  uint16_t grace_ = 0;
  uint16_t status_ = 0;
  uint16_t key_length_ = 0;
  uint16_t headers_length_ = 0;
  uint8_t layout_ = 0;
  mutable std::atomic<uint8_t> store_bits_{0};  // the store's; guarded by its shard mutex
};

class Object::HeaderIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Header;
  using difference_type = std::ptrdiff_t;
  using pointer = const Header*;
  using reference = const Header&;

  HeaderIterator() = default;
  explicit HeaderIterator(const char* at, const char* end);
  const Header& operator*() const { return current_; }
  const Header* operator->() const { return &current_; }
  HeaderIterator& operator++();
  HeaderIterator operator++(int) {
    HeaderIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const HeaderIterator& other) const { return at_ == other.at_; }

 private:
  void Decode();
  const char* at_ = nullptr;    // the current entry
  const char* next_ = nullptr;  // the entry after it
  const char* end_ = nullptr;
  Header current_;
};

class Object::SegmentIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = SegmentView;
  using difference_type = std::ptrdiff_t;
  using pointer = const SegmentView*;
  using reference = const SegmentView&;

  SegmentIterator() = default;
  SegmentIterator(const char* table, const char* body, size_t remaining);
  const SegmentView& operator*() const { return current_; }
  const SegmentView* operator->() const { return &current_; }
  SegmentIterator& operator++();
  SegmentIterator operator++(int) {
    SegmentIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const SegmentIterator& other) const { return remaining_ == other.remaining_; }

 private:
  void Decode();
  const char* table_ = nullptr;  // next entry to decode
  const char* body_ = nullptr;   // deflate bytes of the entry after current_
  size_t remaining_ = 0;         // segments left including current_
  SegmentView current_;
};

// ---- inline ------------------------------------------------------------------------------------

inline ObjectRef::ObjectRef(const ObjectRef& other) : object_(other.object_) {
  if (object_ != nullptr) object_->refs_.fetch_add(1, std::memory_order_relaxed);
}

inline ObjectRef::~ObjectRef() {
  // acq_rel: the last owner must see every other owner's reads finished before it frees.
  if (object_ != nullptr && object_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    Object::Destroy(object_);
  }
}

inline uint32_t ObjectRef::use_count() const {
  return object_ == nullptr ? 0 : object_->refs_.load(std::memory_order_relaxed);
}

inline Object::HeaderIterator Object::HeaderList::begin() const {
  return HeaderIterator(begin_, end_);
}
inline Object::HeaderIterator Object::HeaderList::end() const {
  return HeaderIterator(end_, end_);
}
inline Object::SegmentIterator Object::SegmentList::begin() const {
  return SegmentIterator(table_, body_, count_);
}
inline Object::SegmentIterator Object::SegmentList::end() const {
  return SegmentIterator(nullptr, nullptr, 0);
}

}  // namespace shellac::cache
