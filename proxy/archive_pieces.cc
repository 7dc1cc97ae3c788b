#include "proxy/archive_pieces.h"

#include <chrono>
#include <vector>

namespace shellac::proxy {

namespace {

constexpr std::string_view kTextFlag = "X-Archive-Blob";

class StorePieces : public gitfrag::ArchivePieceStore {
 public:
  explicit StorePieces(cache::Store* store) : store_(store) {}

  bool Find(std::string_view key, Kept* out) override {
    cache::LookupResult found = store_->Lookup(key, Now());
    if (found.state != cache::LookupState::kFresh) return false;
    const cache::Object& object = *found.object;
    out->pieces.clear();
    for (const cache::SegmentView& s : object.segments())
      out->pieces.push_back({s.deflate, s.crc, s.length});
    out->meta = std::string(object.header(kTextFlag).value_or(""));
    out->owner = std::make_shared<const cache::ObjectRef>(std::move(found.object));
    return true;
  }

  void Keep(std::string_view key, const std::vector<Piece>& pieces, std::string_view meta) override {
    std::vector<cache::SegmentView> segments;
    segments.reserve(pieces.size());
    for (const Piece& p : pieces) segments.push_back({p.deflate, p.crc, p.length});
    const cache::Header headers[] = {{kTextFlag, meta}};
    cache::ObjectSpec spec;
    spec.headers = headers;
    spec.stored_at = Now();
    spec.ttl = cache::Object::kForever;
    spec.body = segments;
    cache::Status status;
    cache::ObjectRef object = cache::Object::Create(key, spec, &status);
    if (object) (void)store_->Insert(std::move(object));  // no room: made again next time
  }

  uint64_t max_blob_bytes() const override { return store_->max_object_bytes(); }

 private:
  static std::chrono::sys_seconds Now() {
    return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  }

  cache::Store* const store_;
};

}  // namespace

std::shared_ptr<gitfrag::ArchivePieceStore> MakeArchivePieceStore(cache::Store* store) {
  return std::make_shared<StorePieces>(store);
}

}  // namespace shellac::proxy
