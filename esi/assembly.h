// assembly: executes a page's Plan as its includes complete, giving the output in document order.
// No I/O: the delivery side starts the fetches it is told to, reports each outcome, and pulls
// output pieces; nothing here blocks or calls back.
//
//   Assembly a(Evaluate(page, ...), limits);
//   loop:
//     a.TakeFetches(&fetches)         -> start them all (store, renderer or upstream), at once
//     on each completion: a.Succeed(id, Evaluate(fragment, ..., fetch.location, ...))
//                         or a.Fail(id)     (connect error, timeout, status >= 400, ...)
//     while (a.Next(&piece) == kReady)  send piece
//     kDone: finished; kFailed: the page failed (see below); kWaiting: wait for a completion
//
// Includes are all requested as soon as they are known (up to Limits::max_parallel in flight),
// nested ones as soon as their fragment arrives; output stops only at the first include that is
// not complete yet, so the first byte never waits for the last include.
//
// Failure, as the ESI note says:
// - A failed src is retried with alt. If that fails too (or there is none): with
//   onerror="continue" the include gives nothing; otherwise the failure goes to the nearest
//   enclosing esi:attempt - whose output is then replaced by its esi:except - or, outside any
//   attempt, fails the page: failed() turns true and Next() returns kFailed. Before the first
//   byte was sent the delivery side answers 502; after, it ends the response so that the client
//   sees it incomplete.
// - Includes inside an included fragment belong to the same attempt (or page) as the include
//   that brought the fragment.
// - An attempt's output is held back until every include in it (nested fragments included) has
//   completed; its except's includes are fetched only once it failed.
// - A fragment at esi-max-depth has its includes dropped (nothing output, an issue recorded), as
//   Varnish does with max_esi_depth: a loop is cut there. Past esi-max-includes an include fails.
//
// Threads: one Assembly is driven by one thread at a time (the connection's event loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "esi/evaluate.h"

namespace shellac::esi {

struct Limits {
  int max_depth = 5;       // esi-max-depth: the top page is depth 0
  int max_includes = 256;  // esi-max-includes: per page, nested ones counted
  int max_parallel = 32;   // fetches in flight per page
};

struct Fetch {
  uint32_t id = 0;    // give it back to Succeed() / Fail()
  Location location;  // what to request
  int depth = 0;      // depth of the fragment it returns (evaluate it with this base)
  bool alt = false;   // this is the alt URL, after src failed
};

struct Piece {
  enum Kind : uint8_t { kBytes, kText } kind = kBytes;
  uintptr_t body = 0;  // kBytes: the Plan::body of the plan they come from
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string_view text;  // kText; valid while the Assembly lives
};

class Assembly {
 public:
  enum class State : uint8_t {
    kReady,    // *piece is the next output
    kWaiting,  // the next output needs an include that has not completed
    kDone,     // all output given
    kFailed,   // the page failed (no more output)
  };

  explicit Assembly(Plan page, Limits limits = {});
  ~Assembly();
  Assembly(const Assembly&) = delete;
  Assembly& operator=(const Assembly&) = delete;

  // Appends the fetches to start now, in document order.
  void TakeFetches(std::vector<Fetch>* out);
  // Fetch `id` gave `fragment` (its Evaluate()d template, or Plan::Verbatim()).
  void Succeed(uint32_t id, Plan fragment);
  // Fetch `id` failed.
  void Fail(uint32_t id);

  State Next(Piece* piece);

  bool failed() const { return failed_; }
  // Fetches started and not yet completed.
  int in_flight() const { return in_flight_; }
  // Issues of every plan in the page (evaluation and assembly), in the order they arose.
  std::span<const EvalIssue> issues() const { return issues_; }

 private:
  struct Fragment;
  struct Slot;
  struct Scope;
  struct TryState;
  struct Frame;

  uint32_t AddFragment(Plan plan, int depth);
  void Register(uint32_t fragment, uint32_t begin, uint32_t end, uint32_t scope);
  void QueueSlot(uint32_t slot);
  Slot* Settle(uint32_t id);
  void SlotFailed(uint32_t slot);
  void UnitDone(uint32_t scope);
  void ScopeFailed(uint32_t scope);
  void ScopeSettled(uint32_t scope);
  bool Dead(uint32_t scope) const;

  Limits limits_;
  std::deque<Fragment> fragments_;
  std::deque<Slot> slots_;
  std::deque<Scope> scopes_;
  std::deque<TryState> tries_;
  std::deque<uint32_t> queue_;  // slots to fetch, in order
  std::vector<Frame> cursor_;
  std::vector<EvalIssue> issues_;
  int in_flight_ = 0;
  int includes_ = 0;
  bool failed_ = false;
};

// A synchronous way to run an Assembly, for tests and tools: fetches one include at a time.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // Fetches `fetch.location`: true and *fragment set on success, false on failure.
  virtual bool Resolve(const Fetch& fetch, Plan* fragment) = 0;
};

// Runs `assembly` to its end, handing each piece to `sink`. Returns false when the page failed.
bool RunToEnd(Assembly& assembly, Resolver& resolver,
              const std::function<void(const Piece&)>& sink);

}  // namespace shellac::esi
