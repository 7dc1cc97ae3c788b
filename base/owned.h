// base/owned: the one way to own a C handle. Every handle is wrapped the moment it is created,
// so no module calls a *_free function by hand:
//
//   using EventBasePtr = base::Owned<event_base_free>;     // std::unique_ptr<event_base, ...>
//   EventBasePtr base(event_base_new());
//
// The pointee type is taken from the free function's parameter; its return value (OpenSSL's
// BIO_free returns int) is ignored. Empty deleter: an Owned is the size of a raw pointer.
#pragma once

#include <memory>
#include <type_traits>

namespace shellac::base {

namespace owned_detail {
template <typename R, typename T>
T* PointeeOf(R (*)(T*));
}  // namespace owned_detail

template <auto Free>
struct FreeWith {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};

template <auto Free>
using Owned = std::unique_ptr<std::remove_pointer_t<decltype(owned_detail::PointeeOf(Free))>, FreeWith<Free>>;

}  // namespace shellac::base
