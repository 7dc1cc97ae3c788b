#include "proxy/part_store.h"

#include <chrono>
#include <string>

namespace shellac::proxy {

namespace {

class StoreParts : public gitfrag::PartStore {
 public:
  explicit StoreParts(cache::Store* store) : store_(store) {}

  std::shared_ptr<const void> Find(std::string_view key, std::string* meta) override {
    const auto now =
        std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
    cache::LookupResult found = store_->Lookup(key, now);
    if (found.state != cache::LookupState::kFresh) return nullptr;
    *meta = std::string(found.object->header(kPartMetaHeader).value_or(""));
    return std::make_shared<const cache::ObjectRef>(std::move(found.object));
  }

 private:
  cache::Store* const store_;
};

}  // namespace

std::shared_ptr<gitfrag::PartStore> MakePartStore(cache::Store* store) {
  return std::make_shared<StoreParts>(store);
}

const cache::ObjectRef& PartObject(const std::shared_ptr<const void>& part) {
  return *static_cast<const cache::ObjectRef*>(part.get());
}

}  // namespace shellac::proxy
