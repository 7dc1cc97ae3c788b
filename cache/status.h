// Status: the outcome of a cache/ operation that can fail at run time.
//
// Errors are values: nothing in cache/ throws across its boundary. An ok Status carries no message
// and costs one empty std::string; only the error path allocates.
#pragma once

#include <string>
#include <utility>

namespace shellac::cache {

class Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status s;
    s.message_ = message.empty() ? std::string("error") : std::move(message);
    return s;
  }

  bool ok() const { return message_.empty(); }
  // One line saying what went wrong; empty when ok().
  const std::string& message() const { return message_; }

 private:
  std::string message_;  // empty means ok
};

}  // namespace shellac::cache
