// How an Assembly keeps track:
// - Fragment: one plan spliced into the page (the page itself is fragment 0), with its depth.
// - Slot: one include step of a fragment: queued, fetching src or alt, done (its own fragment),
//   empty (gives nothing) or failed.
// - Scope: where failures go - the page (root), an attempt, or an except. A scope counts its
//   outstanding units (slots still fetching and tries not yet decided); it is settled when that
//   count is 0 and nothing in it failed. Register() holds one extra unit while it adds a range of
//   steps, so that a scope cannot look settled half-way through.
// - TryState: which of its attempt and except gives the output, once known.
// The cursor is a stack of step ranges: the page, then an include's fragment or a try's chosen
// part, and so on.
#include "esi/assembly.h"

#include <utility>

namespace shellac::esi {
namespace {
constexpr uint32_t kNone = 0xffffffffu;
}  // namespace

struct Assembly::Fragment {
  Plan plan;
  int depth = 0;
  uint32_t slot_base = 0;
  uint32_t try_base = 0;
};

struct Assembly::Slot {
  enum State : uint8_t { kIdle, kQueued, kQueuedAlt, kSrc, kAlt, kDone, kEmpty, kFailed };
  uint32_t fragment = 0;
  uint32_t include = 0;
  uint32_t scope = 0;
  uint32_t child = kNone;
  State state = kIdle;
  bool over_limit = false;
};

struct Assembly::Scope {
  enum Kind : uint8_t { kRoot, kAttempt, kExcept };
  uint32_t parent = kNone;
  uint32_t try_id = kNone;
  int outstanding = 0;
  Kind kind = kRoot;
  bool failed = false;
  bool settled = false;
};

struct Assembly::TryState {
  enum Outcome : uint8_t { kPending, kAttemptOk, kExceptRunning, kExceptOk, kFailed };
  uint32_t fragment = 0;
  uint32_t step = 0;
  uint32_t scope = 0;  // the scope the try itself is a unit of
  Outcome outcome = kPending;
};

struct Assembly::Frame {
  uint32_t fragment;
  uint32_t pos;
  uint32_t end;
};

Assembly::Assembly(Plan page, Limits limits) : limits_(limits) {
  scopes_.push_back(Scope{});
  uint32_t top = AddFragment(std::move(page), 0);
  cursor_.push_back({top, 0, static_cast<uint32_t>(fragments_[top].plan.steps.size())});
  Register(top, 0, static_cast<uint32_t>(fragments_[top].plan.steps.size()), 0);
}

Assembly::~Assembly() = default;

uint32_t Assembly::AddFragment(Plan plan, int depth) {
  issues_.insert(issues_.end(), plan.issues.begin(), plan.issues.end());
  Fragment fragment;
  fragment.depth = depth;
  fragment.slot_base = static_cast<uint32_t>(slots_.size());
  fragment.try_base = static_cast<uint32_t>(tries_.size());
  uint32_t index = static_cast<uint32_t>(fragments_.size());
  for (uint32_t i = 0; i < plan.includes.size(); ++i) {
    Slot slot;
    slot.fragment = index;
    slot.include = i;
    slots_.push_back(slot);
  }
  for (uint32_t i = 0; i < plan.try_count; ++i) {
    TryState t;
    t.fragment = index;
    tries_.push_back(t);
  }
  fragment.plan = std::move(plan);
  fragments_.push_back(std::move(fragment));
  return index;
}

void Assembly::Register(uint32_t fragment, uint32_t begin, uint32_t end, uint32_t scope) {
  ++scopes_[scope].outstanding;  // held until the whole range is in
  for (uint32_t i = begin; i < end;) {
    const Fragment& f = fragments_[fragment];
    const Step& step = f.plan.steps[i];
    if (step.kind == StepKind::kInclude) {
      uint32_t id = f.slot_base + step.index;
      Slot& slot = slots_[id];
      slot.scope = scope;
      if (f.depth >= limits_.max_depth) {
        slot.state = Slot::kEmpty;
        issues_.push_back({EvalIssueKind::kDepthLimit, step.offset});
      } else {
        slot.over_limit = includes_ >= limits_.max_includes;
        if (!slot.over_limit) ++includes_;
        ++scopes_[scope].outstanding;
        QueueSlot(id);
      }
      ++i;
    } else if (step.kind == StepKind::kTry) {
      uint32_t try_id = f.try_base + step.index;
      uint32_t except = step.except;
      uint32_t next = step.end;
      tries_[try_id].step = i;
      tries_[try_id].scope = scope;
      ++scopes_[scope].outstanding;  // the try, until it is decided
      Scope attempt;
      attempt.kind = Scope::kAttempt;
      attempt.parent = scope;
      attempt.try_id = try_id;
      uint32_t attempt_id = static_cast<uint32_t>(scopes_.size());
      scopes_.push_back(attempt);
      Register(fragment, i + 1, except, attempt_id);
      i = next;
    } else {
      ++i;
    }
  }
  UnitDone(scope);
}

void Assembly::QueueSlot(uint32_t slot) {
  slots_[slot].state = Slot::kQueued;
  queue_.push_back(slot);
}

bool Assembly::Dead(uint32_t scope) const {
  for (uint32_t s = scope; s != kNone; s = scopes_[s].parent)
    if (scopes_[s].kind == Scope::kAttempt && scopes_[s].failed) return true;
  return false;
}

void Assembly::TakeFetches(std::vector<Fetch>* out) {
  while (!failed_ && !queue_.empty() && in_flight_ < limits_.max_parallel) {
    uint32_t id = queue_.front();
    queue_.pop_front();
    Slot& slot = slots_[id];
    if (Dead(slot.scope)) {
      slot.state = Slot::kEmpty;
      continue;
    }
    const Fragment& f = fragments_[slot.fragment];
    const IncludeCall& call = f.plan.includes[slot.include];
    if (slot.over_limit) {
      issues_.push_back({EvalIssueKind::kTooManyIncludes, call.offset});
      slot.state = Slot::kAlt;  // no alt either
      SlotFailed(id);
      continue;
    }
    bool alt = slot.state == Slot::kQueuedAlt;
    slot.state = alt ? Slot::kAlt : Slot::kSrc;
    if (!(alt ? call.alt_allowed : call.src_allowed)) {
      SlotFailed(id);
      continue;
    }
    Fetch fetch;
    fetch.id = id;
    fetch.location = alt ? call.alt : call.src;
    fetch.depth = f.depth + 1;
    fetch.alt = alt;
    out->push_back(std::move(fetch));
    ++in_flight_;
  }
}

// A fetch completed: its slot stops counting as in flight. Returns the slot when its outcome still
// matters, or null when it is to be ignored (unknown id, already settled, or its scope is dead).
Assembly::Slot* Assembly::Settle(uint32_t id) {
  if (id >= slots_.size()) return nullptr;
  Slot& slot = slots_[id];
  if (slot.state != Slot::kSrc && slot.state != Slot::kAlt) return nullptr;
  --in_flight_;
  if (Dead(slot.scope) || failed_) {
    slot.state = Slot::kEmpty;
    return nullptr;
  }
  return &slot;
}

void Assembly::Succeed(uint32_t id, Plan fragment) {
  Slot* settled = Settle(id);
  if (settled == nullptr) return;
  Slot& slot = *settled;
  uint32_t scope = slot.scope;
  int depth = fragments_[slot.fragment].depth + 1;
  uint32_t child = AddFragment(std::move(fragment), depth);
  Slot& done = slots_[id];  // AddFragment may have grown slots_ (a deque: still valid)
  done.child = child;
  done.state = Slot::kDone;
  Register(child, 0, static_cast<uint32_t>(fragments_[child].plan.steps.size()), scope);
  UnitDone(scope);
}

void Assembly::Fail(uint32_t id) {
  if (Settle(id) != nullptr) SlotFailed(id);
}

// The slot's current URL failed (or was refused).
void Assembly::SlotFailed(uint32_t id) {
  Slot& slot = slots_[id];
  const IncludeCall& call = fragments_[slot.fragment].plan.includes[slot.include];
  if (slot.state == Slot::kSrc && call.has_alt) {
    slot.state = Slot::kQueuedAlt;
    queue_.push_front(id);
    return;
  }
  if (call.continue_on_error) {
    slot.state = Slot::kEmpty;
    UnitDone(slot.scope);
    return;
  }
  slot.state = Slot::kFailed;
  ScopeFailed(slot.scope);
}

void Assembly::UnitDone(uint32_t scope) {
  Scope& s = scopes_[scope];
  if (--s.outstanding > 0 || s.failed || s.settled) return;
  ScopeSettled(scope);
}

void Assembly::ScopeSettled(uint32_t scope) {
  Scope& s = scopes_[scope];
  s.settled = true;
  if (s.kind == Scope::kRoot) return;
  TryState& t = tries_[s.try_id];
  t.outcome = s.kind == Scope::kAttempt ? TryState::kAttemptOk : TryState::kExceptOk;
  UnitDone(t.scope);
}

void Assembly::ScopeFailed(uint32_t scope) {
  Scope& s = scopes_[scope];
  if (s.failed) return;
  s.failed = true;
  if (s.kind == Scope::kRoot) {
    failed_ = true;
    return;
  }
  uint32_t try_id = s.try_id;
  if (s.kind == Scope::kExcept) {
    tries_[try_id].outcome = TryState::kFailed;
    ScopeFailed(tries_[try_id].scope);
    return;
  }
  // The attempt failed: its except runs instead.
  TryState& t = tries_[try_id];
  t.outcome = TryState::kExceptRunning;
  Scope except;
  except.kind = Scope::kExcept;
  except.parent = t.scope;
  except.try_id = try_id;
  uint32_t except_id = static_cast<uint32_t>(scopes_.size());
  scopes_.push_back(except);
  const Step& step = fragments_[t.fragment].plan.steps[t.step];
  Register(t.fragment, step.except + 1, step.end, except_id);
}

Assembly::State Assembly::Next(Piece* piece) {
  while (!failed_ && !cursor_.empty()) {
    Frame& frame = cursor_.back();
    if (frame.pos >= frame.end) {
      cursor_.pop_back();
      continue;
    }
    const Fragment& f = fragments_[frame.fragment];
    const Step& step = f.plan.steps[frame.pos];
    switch (step.kind) {
      case StepKind::kBytes:
        piece->kind = Piece::kBytes;
        piece->body = f.plan.body;
        piece->offset = step.offset;
        piece->length = step.length;
        piece->text = {};
        ++frame.pos;
        return State::kReady;
      case StepKind::kText:
        piece->kind = Piece::kText;
        piece->body = f.plan.body;
        piece->offset = 0;
        piece->length = step.length;
        piece->text = std::string_view(f.plan.text).substr(step.offset, step.length);
        ++frame.pos;
        return State::kReady;
      case StepKind::kInclude: {
        const Slot& slot = slots_[f.slot_base + step.index];
        if (slot.state == Slot::kDone) {
          ++frame.pos;
          uint32_t child = slot.child;
          cursor_.push_back({child, 0, static_cast<uint32_t>(fragments_[child].plan.steps.size())});
          continue;
        }
        if (slot.state == Slot::kEmpty) {
          ++frame.pos;
          continue;
        }
        if (slot.state == Slot::kFailed) return State::kFailed;
        return State::kWaiting;
      }
      case StepKind::kTry: {
        const TryState& t = tries_[f.try_base + step.index];
        uint32_t fragment = frame.fragment;
        if (t.outcome == TryState::kAttemptOk) {
          uint32_t from = frame.pos + 1;
          frame.pos = step.end;
          cursor_.push_back({fragment, from, step.except});
          continue;
        }
        if (t.outcome == TryState::kExceptOk) {
          frame.pos = step.end;
          cursor_.push_back({fragment, step.except + 1, step.end});
          continue;
        }
        if (t.outcome == TryState::kFailed) return State::kFailed;
        return State::kWaiting;
      }
      case StepKind::kExcept:
        frame.pos = frame.end;
        continue;
    }
  }
  return failed_ ? State::kFailed : State::kDone;
}

bool RunToEnd(Assembly& assembly, Resolver& resolver,
              const std::function<void(const Piece&)>& sink) {
  std::vector<Fetch> fetches;
  int idle_rounds = 0;
  for (;;) {
    Piece piece;
    Assembly::State state;
    while ((state = assembly.Next(&piece)) == Assembly::State::kReady) sink(piece);
    if (state == Assembly::State::kDone) return true;
    if (state == Assembly::State::kFailed) return false;
    fetches.clear();
    assembly.TakeFetches(&fetches);
    if (fetches.empty()) {
      // Taking fetches may have settled refused includes; if not, nothing can move any more.
      if (++idle_rounds > 1) return false;
      continue;
    }
    idle_rounds = 0;
    for (const Fetch& fetch : fetches) {
      Plan fragment;
      if (resolver.Resolve(fetch, &fragment))
        assembly.Succeed(fetch.id, std::move(fragment));
      else
        assembly.Fail(fetch.id);
    }
  }
}

}  // namespace shellac::esi
