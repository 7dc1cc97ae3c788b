#include "cache/wire.h"

#include <zlib.h>

#include <cstdint>
#include <vector>

namespace shellac::cache {
namespace {

constexpr char kMagic[4] = {'S', 'H', 'L', 'W'};
constexpr size_t kFrameHead = 4 + 1 + 4 + 4;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void Put32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutBytes(std::string* out, std::string_view bytes) {
  PutVarint(out, bytes.size());
  out->append(bytes);
}

uint32_t Get32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint32_t Crc(std::string_view bytes) {
  return static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

// Reads the payload with every length checked against what is left.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return in_.empty(); }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return Fail();
      const uint8_t byte = static_cast<uint8_t>(in_.front());
      in_.remove_prefix(1);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return Fail();
  }
  uint32_t U32() {
    if (in_.size() < 4) return static_cast<uint32_t>(Fail());
    const uint32_t v = Get32(in_.data());
    in_.remove_prefix(4);
    return v;
  }
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (!ok_ || n > in_.size()) {
      Fail();
      return {};
    }
    std::string_view v = in_.substr(0, n);
    in_.remove_prefix(n);
    return v;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    in_ = {};
    return 0;
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace

bool EncodeObject(const Object& object, std::string* out) {
  if (object.esi_template() != nullptr) return false;
  std::string payload;
  payload.reserve(object.key().size() + object.header_bytes() + object.deflate_bytes() + 64);
  PutBytes(&payload, object.key());
  PutVarint(&payload, static_cast<uint64_t>(object.status()));
  PutVarint(&payload, static_cast<uint64_t>(object.stored_at().time_since_epoch().count()));
  PutVarint(&payload, static_cast<uint64_t>(object.ttl().count()));
  PutVarint(&payload, static_cast<uint64_t>(object.grace().count()));
  size_t headers = 0;
  for ([[maybe_unused]] const Header& h : object.headers()) ++headers;
  PutVarint(&payload, headers);
  for (const Header& h : object.headers()) {
    PutBytes(&payload, h.name);
    PutBytes(&payload, h.value);
  }
  PutVarint(&payload, object.segments().size());
  for (const SegmentView& s : object.segments()) {
    Put32(&payload, s.crc);
    PutVarint(&payload, s.length);
    PutBytes(&payload, s.deflate);
  }
  out->append(kMagic, sizeof kMagic);
  out->push_back(static_cast<char>(kWireVersion));
  Put32(out, Crc(payload));
  Put32(out, static_cast<uint32_t>(payload.size()));
  out->append(payload);
  return true;
}

ObjectRef DecodeObject(std::string_view bytes, Status* status) {
  if (bytes.size() < kFrameHead || std::string_view(bytes.data(), 4) != std::string_view(kMagic, 4)) {
    *status = Status::Error("not a shellac object");
    return {};
  }
  if (static_cast<unsigned char>(bytes[4]) != kWireVersion) {
    *status = Status::Error("object format version " +
                            std::to_string(static_cast<unsigned char>(bytes[4])) + ", expected " +
                            std::to_string(kWireVersion));
    return {};
  }
  const uint32_t crc = Get32(bytes.data() + 5);
  const uint32_t length = Get32(bytes.data() + 9);
  const std::string_view payload = bytes.substr(kFrameHead);
  if (payload.size() != length) {
    *status = Status::Error("object of " + std::to_string(length) + " bytes, " +
                            std::to_string(payload.size()) + " present");
    return {};
  }
  if (Crc(payload) != crc) {
    *status = Status::Error("object checksum mismatch");
    return {};
  }
  Reader in(payload);
  const std::string_view key = in.Bytes();
  ObjectSpec spec;
  spec.status = static_cast<int>(in.Varint());
  spec.stored_at = std::chrono::sys_seconds(std::chrono::seconds(in.Varint()));
  spec.ttl = std::chrono::seconds(in.Varint());
  spec.grace = std::chrono::seconds(in.Varint());
  const uint64_t header_count = in.Varint();
  std::vector<Header> headers;
  for (uint64_t i = 0; in.ok() && i < header_count; ++i) {
    Header h;
    h.name = in.Bytes();
    h.value = in.Bytes();
    headers.push_back(h);
  }
  const uint64_t segment_count = in.Varint();
  std::vector<SegmentView> segments;
  for (uint64_t i = 0; in.ok() && i < segment_count; ++i) {
    SegmentView s;
    s.crc = in.U32();
    s.length = static_cast<uint32_t>(in.Varint());
    s.deflate = in.Bytes();
    segments.push_back(s);
  }
  if (!in.ok() || !in.done()) {
    *status = Status::Error("object fields do not match their lengths");
    return {};
  }
  spec.headers = headers;
  spec.body = segments;
  return Object::Create(key, spec, status);
}

}  // namespace shellac::cache
