// The parser is a loop over states, one byte class at a time, as Varnish's VEP is. What makes it
// deliver the same bytes as Varnish is how each byte's fate is decided:
//
// - Every byte of the body is either output (verbatim) or dropped (skip). The machine does not
//   decide byte by byte: it "marks" a position with a mode, and every byte since the previous mark
//   takes that mode. Bytes whose fate is not known yet (for instance a "-" that may start the "-->"
//   closing an <!--esi comment) simply stay unmarked until the next mark. At the end of the body
//   the unmarked rest takes the mode of the last mark (Varnish's "pending" bytes).
// - The marks are placed where Varnish's state machine places them when it is given the whole
//   body in one call. The result is independent of how the body is chunked here: a mark needs no
//   bytes, only a position, and literal output is a span of the stored body.
// - States with side effects that Varnish enters without consuming a byte (kEsiTagStart,
//   kElementStart, ...) run only once the next byte is there, as in Varnish: a body that ends
//   right after "<esi:" never ran them.
// - Table matches ("<!--esi" vs "<!--", element and attribute names) pick the first entry in table
//   order that the input starts with. Bytes read past a shorter match while a longer entry was
//   still possible are fed again to the state the match leads to.
#include "esi/parser.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/entities.h"

namespace shellac::esi {
namespace {

enum class Mode : uint8_t { kVerbatim, kSkip };

// Byte classes, as Varnish's vct tables define them.
bool IsLws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool IsSp(unsigned char c) {
  return c == ' ' || c == '\t';
}
bool IsNameStart(unsigned char c) {
  return c == ':' || c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= 0xc0 && c != 0xd7 && c != 0xf7);
}
bool IsNameChar(unsigned char c) {
  return IsNameStart(c) || c == '-' || c == '.' || (c >= '0' && c <= '9') || c == 0xb7;
}

struct Word {
  std::string_view text;
  uint8_t id;
};

// What follows '<'.
enum TagKind : uint8_t {
  kTagEsiComment,
  kTagEmptyComment,
  kTagComment,
  kTagEsiEnd,
  kTagEsi,
  kTagCdata
};
constexpr Word kStartTable[] = {
    {"!--esi", kTagEsiComment}, {"!---->", kTagEmptyComment},
    {"!--", kTagComment},       {"/esi:", kTagEsiEnd},
    {"esi:", kTagEsi},          {"![CDATA[", kTagCdata},
};

enum Element : uint8_t {
  kBogus,
  kInclude,
  kRemove,
  kComment,
  kTry,
  kAttempt,
  kExcept,
  kChoose,
  kWhen,
  kOtherwise,
  kVars,
};
constexpr Word kElementTable[] = {
    {"include", kInclude},     {"remove", kRemove}, {"comment", kComment}, {"try", kTry},
    {"attempt", kAttempt},     {"except", kExcept}, {"choose", kChoose},   {"when", kWhen},
    {"otherwise", kOtherwise}, {"vars", kVars},
};
constexpr size_t kVarnishElements = 3;  // the first three

enum Attribute : uint8_t { kAttrSrc, kAttrOnerror, kAttrAlt, kAttrTest };
constexpr Word kIncludeAttrs[] = {
    {"src=", kAttrSrc}, {"onerror=", kAttrOnerror}, {"alt=", kAttrAlt}};
constexpr size_t kVarnishIncludeAttrs = 2;
constexpr Word kWhenAttrs[] = {{"test=", kAttrTest}};

// Incremental table matcher: the first entry in table order that the input starts with. Bytes are
// offered one at a time; any split of the input gives the same decision.
class Matcher {
 public:
  enum Result : uint8_t { kMore, kMatched, kNoMatch };

  void Start(const Word* table, size_t size, uint64_t offset) {
    table_ = table;
    size_ = size;
    offset_ = offset;
    length_ = 0;
    alive_ = (size >= 32 ? ~0u : (1u << size) - 1);
    complete_ = -1;
  }

  // Offers byte c. *consumed tells whether c is part of what was read; on kMatched, excess()
  // holds the bytes read past the match (to be fed to the next state), c included when consumed.
  Result Offer(char c, bool* consumed) {
    uint32_t next = 0;
    for (uint32_t bits = alive_; bits != 0; bits &= bits - 1) {
      int i = __builtin_ctz(bits);
      std::string_view w = table_[i].text;
      if (length_ < w.size() && w[length_] == c) next |= 1u << i;
    }
    if (next == 0) {
      *consumed = false;
      return complete_ >= 0 ? kMatched : kNoMatch;
    }
    *consumed = true;
    buffer_[length_++] = c;
    alive_ = next;
    for (uint32_t bits = next; bits != 0; bits &= bits - 1) {
      int i = __builtin_ctz(bits);
      if (table_[i].text.size() == length_) {
        alive_ &= ~(1u << i);
        if (complete_ < 0 || i < complete_) complete_ = i;
      }
    }
    if (complete_ >= 0 && (alive_ & ((1u << complete_) - 1)) == 0) return kMatched;
    return kMore;
  }

  uint8_t id() const { return table_[complete_].id; }
  std::string_view excess() const {
    size_t matched = table_[complete_].text.size();
    return {buffer_.data() + matched, length_ - matched};
  }
  uint64_t excess_offset() const { return offset_ + table_[complete_].text.size(); }

 private:
  const Word* table_ = nullptr;
  size_t size_ = 0;
  uint64_t offset_ = 0;
  std::array<char, 16> buffer_{};
  size_t length_ = 0;
  uint32_t alive_ = 0;
  int complete_ = -1;
};

// Finds "$(...)" references in the bytes inside esi:vars, one byte at a time (the grammar of
// ParseVarRef()).
class VarScanner {
 public:
  enum class Step : uint8_t { kNone, kComplete };

  void Reset() { state_ = kIdle; }

  // Offers the byte at `offset`. On kComplete, the reference is text() and began at start().
  Step Offer(char c, uint64_t offset) {
    for (;;) {
      if (state_ != kIdle && offset + 1 - start_ > kMaxVarRefLength) state_ = kIdle;
      switch (state_) {
        case kIdle:
          if (c == '$') Begin(c, offset);
          return Step::kNone;
        case kDollar:
          if (c == '(') return Take(c, kName);
          break;
        case kName:
          if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_')
            return Take(c, kName);
          if (length_ == 2) break;
          if (c == '{') return Take(c, kKey);
          if (c == '|') return Take(c, kDefaultStart);
          if (c == ')') return Done(c);
          break;
        case kKey:
          if (IsBare(c)) return Take(c, kKeyMore);
          break;
        case kKeyMore:
          if (IsBare(c)) return Take(c, kKeyMore);
          if (c == '}') return Take(c, kAfterKey);
          break;
        case kAfterKey:
          if (c == '|') return Take(c, kDefaultStart);
          if (c == ')') return Done(c);
          break;
        case kDefaultStart:
          if (c == '\'') return Take(c, kQuoted);
          if (c == ')') return Done(c);
          if (IsBare(c)) return Take(c, kBare);
          break;
        case kQuoted:
          return Take(c, c == '\'' ? kAfterQuote : kQuoted);
        case kAfterQuote:
          if (c == ')') return Done(c);
          break;
        case kBare:
          if (c == ')') return Done(c);
          if (IsBare(c)) return Take(c, kBare);
          break;
      }
      state_ = kIdle;  // not a reference: look at c again as a possible '$'
    }
  }

  std::string_view text() const { return {buffer_.data(), length_}; }
  uint64_t start() const { return start_; }
  bool active() const { return state_ != kIdle; }

 private:
  enum State : uint8_t {
    kIdle,
    kDollar,
    kName,
    kKey,
    kKeyMore,
    kAfterKey,
    kDefaultStart,
    kQuoted,
    kAfterQuote,
    kBare,
  };
  static bool IsBare(char c) { return IsVarBareChar(c); }
  void Begin(char c, uint64_t offset) {
    start_ = offset;
    length_ = 0;
    buffer_[length_++] = c;
    state_ = kDollar;
  }
  Step Take(char c, State next) {
    buffer_[length_++] = c;
    state_ = next;
    return Step::kNone;
  }
  Step Done(char c) {
    buffer_[length_++] = c;
    state_ = kIdle;
    return Step::kComplete;
  }

  State state_ = kIdle;
  uint64_t start_ = 0;
  size_t length_ = 0;
  std::array<char, kMaxVarRefLength> buffer_{};
};

}  // namespace

class Parser::Machine {
 public:
  explicit Machine(ParserOptions options) : options_(options) {
    attr_.reserve(256);
    pending_refs_.reserve(16);
  }

  void Feed(std::string_view chunk) {
    if (chunk.empty()) return;
    chunk_ = chunk.data();
    chunk_base_ = fed_;
    fed_ += chunk.size();
    Run(chunk.data(), chunk.data() + chunk.size(), chunk_base_);
    ScanVars(fed_);
    // Varnish marks plain text as output at the end of every call. Here only the end of the body
    // counts as such (so that chunking cannot matter), but in plain text the next mark is verbatim
    // anyway, so marking now changes nothing and keeps the queue of $(...) short.
    // (Not past a $(...) still being read: a mark there would split it.)
    if (state_ == State::kText && !remove_ && CommentIdle())
      Mark(scanner_.active() ? scanner_.start() : fed_, Mode::kVerbatim);
    chunk_ = nullptr;
  }

  Template Finish() {
    // What the end of Varnish's last VEP_Parse() call marks ...
    switch (state_) {
      case State::kProlog:
      case State::kNotXml:
        Mark(fed_, Mode::kVerbatim);
        break;
      case State::kOtherTag:
      case State::kUntil:
        if (!remove_) Mark(fed_, Mode::kVerbatim);
        break;
      case State::kText:
        if (!remove_ && CommentIdle()) Mark(fed_, Mode::kVerbatim);
        break;
      default:
        break;
    }
    // ... then what it leaves pending, which VEP_Finish() gives the last mark's mode.
    Mark(fed_, (in_esi_tag_ || remove_) ? Mode::kSkip : last_mode_);
    if (state_ != State::kStart && state_ != State::kProlog && state_ != State::kNotXml &&
        state_ != State::kText)
      AddProblem(ProblemKind::kEndedInsideTag, fed_);
    if (remove_) AddProblem(ProblemKind::kRemoveUnclosed, fed_);
    while (depth_ > 0) {
      AddProblem(ProblemKind::kUnclosedElement, fed_);
      PopBlock();
    }
    t_.body_length_ = fed_;
    t_.esi_ = esi_found_;
    if (!esi_found_) {
      // Nothing for ESI here: the body goes out as it is.
      t_.instructions_.clear();
      t_.includes_.clear();
      t_.expressions_.clear();
      t_.variables_.clear();
      coalesce_ = false;
      EmitLiteral(0, fed_);
    }
    t_.instructions_.shrink_to_fit();
    return std::move(t_);
  }

  uint64_t fed() const { return fed_; }

 private:
  enum class State : uint8_t {
    kStart,            // nothing read yet
    kProlog,           // leading whitespace; the first other byte must be '<'
    kNotXml,           // not markup: nothing is processed
    kText,             // between tags (watching for the "-->" of <!--esi when armed)
    kTagName,          // after '<': matching kStartTable
    kOtherTag,         // not ours: up to '>'
    kEsiCommentStart,  // "<!--esi" read
    kCommentStart,     // "<!--" read
    kCdataStart,       // "<![CDATA[" read
    kUntil,            // inside a comment or CDATA: up to its terminator
    kEsiTagStart,      // "<esi:" or "</esi:" read
    kElementName,      // matching kElementTable
    kElementStart,     // element known; checks before its attributes
    kInTag,            // between attributes
    kTagError,         // bad ESI tag: dropped up to '>'
    kAttr,             // an attribute name starts
    kAttrName,         // matching the element's attribute table
    kAttrGetValue,     // a wanted attribute: collect its value
    kSkipAttr,         // an attribute name not wanted
    kAttrDelim,        // after '='
    kAttrValue,        // inside the value
  };

  enum class BlockKind : uint8_t { kTry, kAttempt, kExcept, kChoose, kWhen, kOtherwise, kVars };
  struct Block {
    BlockKind kind;
    uint32_t instruction;  // index of its opening instruction (none for kVars)
    bool has_attempt;      // kTry
    bool has_except;       // kTry
    bool has_otherwise;    // kChoose
  };

  struct PendingRef {
    uint64_t start;
    uint64_t end;
    VarRef ref;
  };

  // ------------------------------------------------------------------------------------------
  // The state machine

  // The bytes Run is given: [begin, end), the first at body offset `base`.
  struct Span {
    const char* begin;
    const char* end;
    uint64_t base;
    uint64_t At(const char* q) const { return base + static_cast<uint64_t>(q - begin); }
  };

  // One state's step per call: each takes the bytes from `p` it can, may change state_, and returns
  // where the next step begins (p itself when a state is left without consuming a byte).
  void Run(const char* begin, const char* end, uint64_t base) {
    const Span span{begin, end, base};
    const char* p = begin;
    while (p < end) {
      switch (state_) {
        case State::kStart: p = OnStart(p, span); break;
        case State::kProlog: p = OnProlog(p, span); break;
        case State::kNotXml: p = end; break;  // not markup: nothing is processed
        case State::kText: p = OnText(p, span); break;
        case State::kTagName: p = OnTagName(p); break;
        case State::kOtherTag: p = OnOtherTag(p, span); break;
        case State::kEsiCommentStart: p = OnEsiCommentStart(p, span); break;
        case State::kCommentStart: p = OnCommentStart(p); break;
        case State::kCdataStart: p = OnCdataStart(p); break;
        case State::kUntil: p = OnUntil(p, span); break;
        case State::kEsiTagStart: p = OnEsiTagStart(p, span); break;
        case State::kElementName: p = OnElementName(p); break;
        case State::kElementStart: ElementStart(span.At(p)); break;
        case State::kInTag: p = OnInTag(p, span); break;
        case State::kTagError: p = OnTagError(p, span); break;
        case State::kAttr: p = OnAttr(p, span); break;
        case State::kAttrName: p = OnAttrName(p); break;
        case State::kAttrGetValue: p = OnAttrGetValue(p); break;
        case State::kSkipAttr: p = OnSkipAttr(p, span); break;
        case State::kAttrDelim: p = OnAttrDelim(p, span); break;
        case State::kAttrValue: p = OnAttrValue(p, span); break;
      }
    }
  }

  const char* OnStart(const char* p, const Span& span) {
    Mark(span.At(p), Mode::kSkip);
    state_ = options_.require_xml ? State::kProlog : State::kText;
    return p;
  }

  const char* OnProlog(const char* p, const Span& span) {
    const char* end = span.end;
    while (p < end && IsLws(static_cast<unsigned char>(*p))) ++p;
    Mark(span.At(p), Mode::kVerbatim);
    if (p < end) {
      if (*p == '<') {
        tag_start_ = span.At(p);
        ++p;
        StartTag(span.At(p));
      } else {
        AddProblem(ProblemKind::kNotXml, span.At(p));
        state_ = State::kNotXml;
      }
    }
    return p;
  }

  // Between tags: up to the next '<', watching for the "-->" of <!--esi when armed.
  const char* OnText(const char* p, const Span& span) {
    const char* end = span.end;
    emptytag_ = false;
    while (p < end && *p != '<') {
      if (!cmt_armed_) {
        const void* lt = std::memchr(p, '<', static_cast<size_t>(end - p));
        p = lt != nullptr ? static_cast<const char*>(lt) : end;
        break;
      }
      if (*p != kCommentEnd[cmt_index_]) {
        // A mismatch restarts the search after this byte (so "--->" does not close).
        ++p;
        cmt_index_ = 0;
        continue;
      }
      if (!remove_ && cmt_index_ == 0) Mark(span.At(p), Mode::kVerbatim);
      ++p;
      if (++cmt_index_ == 3) {
        esi_found_ = true;
        cmt_armed_ = false;
        cmt_index_ = 0;
        Mark(span.At(p), Mode::kSkip);  // the "-->" itself is not output
      }
    }
    if (p < end) {
      if (!remove_) Mark(span.At(p), Mode::kVerbatim);
      tag_start_ = span.At(p);
      ++p;
      StartTag(span.At(p));
    }
    return p;
  }

  const char* OnTagName(const char* p) {
    bool consumed = false;
    Matcher::Result r = matcher_.Offer(*p, &consumed);
    if (consumed) ++p;
    if (r == Matcher::kMore) return p;
    if (r == Matcher::kNoMatch) {
      state_ = State::kOtherTag;
      return p;
    }
    switch (matcher_.id()) {
      case kTagEsiComment:
        state_ = State::kEsiCommentStart;
        break;
      case kTagEmptyComment:
        state_ = State::kText;
        break;
      case kTagComment:
        state_ = State::kCommentStart;
        break;
      case kTagEsiEnd:
        endtag_ = true;
        state_ = State::kEsiTagStart;
        break;
      case kTagEsi:
        state_ = State::kEsiTagStart;
        break;
      case kTagCdata:
        state_ = State::kCdataStart;
        break;
    }
    ReplayExcess();
    return p;
  }

  // A tag that is not ours: up to '>'.
  const char* OnOtherTag(const char* p, const Span& span) {
    const void* gt = std::memchr(p, '>', static_cast<size_t>(span.end - p));
    if (gt == nullptr) return span.end;
    state_ = State::kText;
    return static_cast<const char*>(gt) + 1;
  }

  const char* OnEsiCommentStart(const char* p, const Span& span) {
    if (remove_) AddProblem(ProblemKind::kNestedInRemove, span.At(p));
    cmt_armed_ = true;
    cmt_index_ = 0;
    state_ = State::kText;
    Mark(span.At(p), Mode::kSkip);  // "<!--esi" is not output
    return p;
  }

  const char* OnCommentStart(const char* p) {
    // A plain comment disarms a pending <!--esi: its "-->" is then plain text.
    cmt_armed_ = false;
    cmt_index_ = 0;
    until_ = kCommentEnd;
    until_index_ = 0;
    state_ = State::kUntil;
    return p;
  }

  const char* OnCdataStart(const char* p) {
    until_ = kCdataEnd;
    until_index_ = 0;
    state_ = State::kUntil;
    return p;
  }

  // Inside a comment or CDATA: up to its terminator.
  const char* OnUntil(const char* p, const Span& span) {
    const char* end = span.end;
    while (p < end) {
      if (until_index_ == 0) {
        const void* hit = std::memchr(p, until_[0], static_cast<size_t>(end - p));
        if (hit == nullptr) return end;
        p = static_cast<const char*>(hit);
      }
      if (*p++ != until_[until_index_++]) {
        until_index_ = 0;  // restart after this byte, as Varnish does
      } else if (until_[until_index_] == '\0') {
        state_ = State::kText;
        break;
      }
    }
    return p;
  }

  const char* OnEsiTagStart(const char* p, const Span& span) {
    in_esi_tag_ = true;
    esi_found_ = true;
    Mark(span.At(p), Mode::kSkip);
    matcher_.Start(kElementTable,
                   options_.dialect == Dialect::kVarnish ? kVarnishElements : std::size(kElementTable),
                   span.At(p));
    state_ = State::kElementName;
    return p;
  }

  const char* OnElementName(const char* p) {
    bool consumed = false;
    Matcher::Result r = matcher_.Offer(*p, &consumed);
    if (consumed) ++p;
    if (r == Matcher::kMore) return p;
    element_ = r == Matcher::kNoMatch ? kBogus : static_cast<Element>(matcher_.id());
    state_ = State::kElementStart;
    if (r == Matcher::kMatched) ReplayExcess();
    return p;
  }

  // Between attributes: whitespace, "/>" or ">", or the start of the next attribute. Inlined into
  // Run like the other steps (GCC leaves this one out of line otherwise, at a cost per tag).
  [[gnu::always_inline]] const char* OnInTag(const char* p, const Span& span) {
    const char* end = span.end;
    bool& canattr = esi10_tag_ ? esi10_canattr_ : varnish_canattr_;
    while (p < end && IsLws(static_cast<unsigned char>(*p)) && !emptytag_) {
      ++p;
      canattr = true;
    }
    if (p < end && *p == '/' && !emptytag_) {
      ++p;
      emptytag_ = true;
      canattr = false;
    }
    if (p < end && *p == '>') {
      ++p;
      Mark(span.At(p), Mode::kSkip);
      EndOfTag(span.At(p));
      in_esi_tag_ = false;
      state_ = State::kText;
    } else if (p < end && emptytag_) {
      AddProblem(ProblemKind::kGreaterNotAfterSlash, span.At(p));
      state_ = State::kTagError;
    } else if (p < end && canattr && IsNameStart(static_cast<unsigned char>(*p))) {
      state_ = State::kAttr;
    } else if (p < end) {
      AddProblem(ProblemKind::kBadAttributeStart, span.At(p));
      state_ = State::kTagError;
    }
    return p;
  }

  // A bad ESI tag: dropped up to '>'.
  const char* OnTagError(const char* p, const Span& span) {
    const void* gt = std::memchr(p, '>', static_cast<size_t>(span.end - p));
    if (gt == nullptr) return span.end;
    p = static_cast<const char*>(gt) + 1;
    Mark(span.At(p), Mode::kSkip);
    in_esi_tag_ = false;
    collecting_ = false;
    state_ = State::kText;
    return p;
  }

  const char* OnAttr(const char* p, const Span& span) {
    if (attr_table_size_ > 0) {
      matcher_.Start(attr_table_, attr_table_size_, span.At(p));
      state_ = State::kAttrName;
    } else {
      ++p;  // the name's first byte (a name start byte, hence also a name byte)
      collecting_ = false;
      state_ = State::kSkipAttr;
    }
    return p;
  }

  const char* OnAttrName(const char* p) {
    bool consumed = false;
    Matcher::Result r = matcher_.Offer(*p, &consumed);
    if (consumed) ++p;
    if (r == Matcher::kMore) return p;
    if (r == Matcher::kNoMatch) {
      collecting_ = false;
      state_ = State::kSkipAttr;
      return p;
    }
    attr_id_ = matcher_.id();
    state_ = State::kAttrGetValue;
    ReplayExcess();
    return p;
  }

  const char* OnAttrGetValue(const char* p) {
    collecting_ = true;
    attr_.clear();
    attr_overflow_ = false;
    state_ = State::kAttrDelim;
    return p;
  }

  // An attribute name not wanted: skipped, and its value too.
  const char* OnSkipAttr(const char* p, const Span& span) {
    const char* end = span.end;
    while (p < end && IsNameChar(static_cast<unsigned char>(*p))) ++p;
    if (p < end) {
      if (*p == '=') {
        ++p;
        state_ = State::kAttrDelim;
      } else if (*p == '>' || *p == '/' || IsSp(static_cast<unsigned char>(*p))) {
        state_ = State::kInTag;
      } else {
        AddProblem(ProblemKind::kBadAttributeChar, span.At(p));
        state_ = State::kTagError;
      }
    }
    return p;
  }

  // After '=': a quote, or the first byte of an unquoted value.
  const char* OnAttrDelim(const char* p, const Span& span) {
    if (*p == '"' || *p == '\'') {
      delim_ = *p++;
      state_ = State::kAttrValue;
    } else if (!IsSp(static_cast<unsigned char>(*p))) {
      delim_ = ' ';
      state_ = State::kAttrValue;
    } else {
      AddProblem(ProblemKind::kBadAttributeDelimiter, span.At(p));
      collecting_ = false;
      state_ = State::kTagError;
    }
    return p;
  }

  const char* OnAttrValue(const char* p, const Span& span) {
    const char* end = span.end;
    // Varnish ends every value at '>'; shellac's own elements allow it inside quotes
    // (test="$(a) > 1").
    bool gt_ends = !(esi10_tag_ && delim_ != ' ');
    const char* start = p;
    while (p < end && !(*p == '>' && gt_ends) && *p != delim_ && (delim_ != ' ' || !IsSp(static_cast<unsigned char>(*p))))
      ++p;
    if (collecting_) Collect(start, p);
    if (p < end && *p == '>' && gt_ends) {
      AddProblem(ProblemKind::kUnterminatedAttribute, span.At(p));
      delim_ = 0;
      collecting_ = false;
      state_ = State::kTagError;
    } else if (p < end) {
      delim_ = 0;
      ++p;
      state_ = State::kInTag;
      if (collecting_) {
        collecting_ = false;
        EndOfAttribute(span.At(p));
      }
    }
    return p;
  }

  void StartTag(uint64_t offset) {
    endtag_ = false;
    matcher_.Start(kStartTable, std::size(kStartTable), offset);
    state_ = State::kTagName;
  }

  // Bytes a match read past its end go to the state the match led to.
  void ReplayExcess() {
    std::string_view excess = matcher_.excess();
    if (excess.empty()) return;
    std::array<char, 16> copy{};
    std::memcpy(copy.data(), excess.data(), excess.size());
    Run(copy.data(), copy.data() + excess.size(), matcher_.excess_offset());
  }

  bool CommentIdle() const { return !cmt_armed_ || cmt_index_ == 0; }

  // ------------------------------------------------------------------------------------------
  // Elements

  void ElementStart(uint64_t offset) {
    esi10_tag_ = false;
    attr_table_ = nullptr;
    attr_table_size_ = 0;
    switch (element_) {
      case kBogus:
        AddProblem(ProblemKind::kUnknownElement, offset);
        state_ = State::kTagError;
        return;
      case kInclude:
      case kComment:
        if (remove_) {
          AddProblem(ProblemKind::kNestedInRemove, offset);
          state_ = State::kTagError;
        } else if (endtag_) {
          AddProblem(ProblemKind::kIllegalEndTag, offset);
          state_ = State::kTagError;
        } else {
          if (element_ == kInclude) {
            attr_table_ = kIncludeAttrs;
            attr_table_size_ = options_.dialect == Dialect::kVarnish ? kVarnishIncludeAttrs
                                                                     : std::size(kIncludeAttrs);
            inc_has_alt_ = false;
            inc_alt_.clear();
          }
          state_ = State::kInTag;
        }
        return;
      case kRemove:
        state_ = State::kInTag;
        return;
      default:
        break;
    }
    // shellac's ESI 1.0 elements.
    esi10_tag_ = true;
    esi10_canattr_ = false;
    if (remove_) {
      AddProblem(ProblemKind::kNestedInRemove, offset);
      state_ = State::kTagError;
      return;
    }
    if (element_ == kWhen) {
      attr_table_ = kWhenAttrs;
      attr_table_size_ = std::size(kWhenAttrs);
      when_has_test_ = false;
      when_test_.clear();
    }
    state_ = State::kInTag;
  }

  void Collect(const char* begin, const char* end) {
    size_t n = static_cast<size_t>(end - begin);
    if (attr_overflow_ || attr_.size() + n > Parser::kMaxAttributeLength) {
      attr_overflow_ = true;
      return;
    }
    attr_.append(begin, n);
  }

  void EndOfAttribute(uint64_t offset) {
    if (attr_overflow_) {
      AddProblem(ProblemKind::kAttributeTooLong, offset);
      state_ = State::kTagError;
      return;
    }
    // Varnish keeps values as C strings: a NUL ends them.
    size_t nul = attr_.find('\0');
    if (nul != std::string::npos) attr_.resize(nul);
    switch (attr_id_) {
      case kAttrSrc:
        if (inc_has_src_) {
          AddProblem(ProblemKind::kIncludeMultipleSrc, offset);
          state_ = State::kTagError;
          inc_has_src_ = false;
          inc_src_.clear();
          return;
        }
        if (std::any_of(attr_.begin(), attr_.end(),
                        [](char c) { return IsLws(static_cast<unsigned char>(c)); })) {
          AddProblem(ProblemKind::kIncludeSrcWhitespace, offset);
          state_ = State::kTagError;
          return;
        }
        inc_src_.swap(attr_);
        inc_has_src_ = true;
        break;
      case kAttrOnerror:
        inc_continue_ = attr_ == "continue";
        break;
      case kAttrAlt:
        inc_alt_.swap(attr_);
        inc_has_alt_ = true;
        break;
      case kAttrTest:
        when_test_.swap(attr_);
        when_has_test_ = true;
        break;
    }
    attr_.clear();
  }

  // The tag's '>' was read; everything before it is marked.
  void EndOfTag(uint64_t offset) {
    switch (element_) {
      case kInclude:
        DoInclude(offset);
        return;
      case kRemove:
        if (emptytag_)
          AddProblem(ProblemKind::kRemoveEmpty, offset);
        else if (remove_ && !endtag_)
          AddProblem(ProblemKind::kRemoveAlreadyOpen, offset);
        else if (!remove_ && endtag_)
          AddProblem(ProblemKind::kRemoveNotOpen, offset);
        else
          remove_ = !endtag_;
        return;
      case kComment:
        if (!emptytag_) AddProblem(ProblemKind::kCommentNotEmpty, offset);
        return;
      case kBogus:
        return;
      default:
        break;
    }
    // An end tag closes; an empty-element tag opens and closes at once.
    if (endtag_ || (OpenBlock(KindOf(element_), offset) && emptytag_))
      CloseBlock(KindOf(element_), offset);
  }

  void DoInclude(uint64_t offset) {
    if (!emptytag_) AddProblem(ProblemKind::kIncludeNotEmpty, offset);
    if (!inc_has_src_) {
      AddProblem(ProblemKind::kIncludeNoSrc, offset);
      return;
    }
    // Varnish forgets onerror="continue" only after an include it accepted; after one it refuses
    // at parse time (https://, "http://host" without a path) the flag carries over to the next.
    std::string_view src = inc_src_;
    bool refused_by_varnish = (src.size() > 7 && src.substr(0, 7) == "http://" &&
                               src.find('/', 7) == std::string_view::npos) ||
                              (src.size() > 8 && src.substr(0, 8) == "https://");
    if (ContentAllowed()) {
      Include include;
      bool variables = options_.dialect == Dialect::kEsi10;
      include.src = Interpolation::Compile(src, variables);
      include.has_alt = inc_has_alt_;
      if (inc_has_alt_) include.alt = Interpolation::Compile(inc_alt_, variables);
      include.continue_on_error = inc_continue_;
      t_.AddInclude(tag_start_, std::move(include));
      coalesce_ = false;
    } else {
      AddProblem(ProblemKind::kIncludeMisplaced, offset);
    }
    inc_has_src_ = false;
    inc_src_.clear();
    inc_has_alt_ = false;
    inc_alt_.clear();
    if (!refused_by_varnish) inc_continue_ = false;
  }

  static BlockKind KindOf(Element element) {
    switch (element) {
      case kTry:
        return BlockKind::kTry;
      case kAttempt:
        return BlockKind::kAttempt;
      case kExcept:
        return BlockKind::kExcept;
      case kChoose:
        return BlockKind::kChoose;
      case kWhen:
        return BlockKind::kWhen;
      case kOtherwise:
        return BlockKind::kOtherwise;
      default:
        return BlockKind::kVars;
    }
  }

  Block* Top() { return depth_ > 0 ? &stack_[depth_ - 1] : nullptr; }

  // Output may go here: not directly inside esi:try or esi:choose.
  bool ContentAllowed() {
    Block* top = Top();
    return top == nullptr || (top->kind != BlockKind::kTry && top->kind != BlockKind::kChoose);
  }

  bool OpenBlock(BlockKind kind, uint64_t offset) {
    Block* top = Top();
    bool in_try = top != nullptr && top->kind == BlockKind::kTry;
    bool in_choose = top != nullptr && top->kind == BlockKind::kChoose;
    bool placed;
    switch (kind) {
      case BlockKind::kAttempt:
      case BlockKind::kExcept:
        placed = in_try;
        break;
      case BlockKind::kWhen:
      case BlockKind::kOtherwise:
        placed = in_choose;
        break;
      default:
        placed = !in_try && !in_choose;
        break;
    }
    if (!placed) {
      AddProblem(ProblemKind::kMisplacedElement, offset);
      return false;
    }
    if ((kind == BlockKind::kAttempt && top->has_attempt) ||
        (kind == BlockKind::kExcept && top->has_except) ||
        (kind == BlockKind::kOtherwise && top->has_otherwise)) {
      AddProblem(ProblemKind::kDuplicateElement, offset);
      return false;
    }
    if (depth_ >= Parser::kMaxBlockDepth) {
      AddProblem(ProblemKind::kTooDeep, offset);
      return false;
    }
    if (kind == BlockKind::kAttempt) top->has_attempt = true;
    if (kind == BlockKind::kExcept) top->has_except = true;
    if (kind == BlockKind::kOtherwise) top->has_otherwise = true;

    Block block{kind, 0, false, false, false};
    if (kind == BlockKind::kVars) {
      ++vars_depth_;
    } else {
      Instruction instruction;
      instruction.offset = tag_start_;
      switch (kind) {
        case BlockKind::kTry:
          instruction.op = Op::kTry;
          break;
        case BlockKind::kAttempt:
          instruction.op = Op::kAttempt;
          break;
        case BlockKind::kExcept:
          instruction.op = Op::kExcept;
          break;
        case BlockKind::kChoose:
          instruction.op = Op::kChoose;
          break;
        case BlockKind::kWhen:
          instruction.op = Op::kWhen;
          break;
        default:
          instruction.op = Op::kOtherwise;
          break;
      }
      if (kind == BlockKind::kWhen) {
        Expression expression;
        if (!when_has_test_) {
          AddProblem(ProblemKind::kMissingTest, offset);
        } else {
          // The value is XML: the five predefined entities stand for their characters.
          std::string test = base::XmlDecoded(when_test_);
          size_t error_at = 0;
          if (!expression.Compile(test, &error_at)) AddProblem(ProblemKind::kBadTest, offset);
        }
        instruction.length = static_cast<uint32_t>(t_.expressions_.size());
        t_.expressions_.push_back(std::move(expression));
      }
      block.instruction = static_cast<uint32_t>(t_.instructions_.size());
      t_.instructions_.push_back(instruction);
    }
    stack_[depth_++] = block;
    coalesce_ = false;
    return true;
  }

  void CloseBlock(BlockKind kind, uint64_t offset) {
    size_t i = depth_;
    while (i > 0 && stack_[i - 1].kind != kind) --i;
    if (i == 0) {
      AddProblem(ProblemKind::kUnmatchedEndTag, offset);
      return;
    }
    while (depth_ > i) {
      AddProblem(ProblemKind::kUnclosedElement, offset);
      PopBlock();
    }
    PopBlock();
  }

  void PopBlock() {
    Block& block = stack_[--depth_];
    if (block.kind == BlockKind::kVars) {
      if (--vars_depth_ == 0) {
        scanner_.Reset();
        pending_refs_.clear();
      }
    } else {
      t_.instructions_[block.instruction].end = static_cast<uint32_t>(t_.instructions_.size());
    }
    coalesce_ = false;
  }

  // ------------------------------------------------------------------------------------------
  // Marks and output

  // Bytes [marked_, pos) take `mode`.
  void Mark(uint64_t pos, Mode mode) {
    if (pos > marked_) {
      ScanVars(pos);
      if (mode == Mode::kVerbatim) EmitVerbatim(marked_, pos);
      // References that began before pos are settled: used, or split by a mark, or skipped.
      auto settled = std::find_if(pending_refs_.begin(), pending_refs_.end(),
                                  [pos](const PendingRef& r) { return r.start >= pos; });
      pending_refs_.erase(pending_refs_.begin(), settled);
      marked_ = pos;
    }
    last_mode_ = mode;
  }

  void EmitVerbatim(uint64_t from, uint64_t to) {
    if (!ContentAllowed()) return;
    for (PendingRef& r : pending_refs_) {
      if (r.start >= to) break;
      if (r.start < from || r.end > to) continue;
      EmitLiteral(from, r.start);
      Instruction instruction;
      instruction.op = Op::kVariable;
      instruction.offset = r.start;
      instruction.length = static_cast<uint32_t>(t_.variables_.size());
      t_.variables_.push_back(std::move(r.ref));
      t_.instructions_.push_back(instruction);
      coalesce_ = false;
      from = r.end;
    }
    EmitLiteral(from, to);
  }

  void EmitLiteral(uint64_t from, uint64_t to) {
    constexpr uint64_t kMaxSpan = 0xffffffffu;
    while (from < to) {
      if (coalesce_ && !t_.instructions_.empty()) {
        Instruction& last = t_.instructions_.back();
        if (last.op == Op::kLiteral && last.offset + last.length == from &&
            last.length < kMaxSpan) {
          uint64_t add = std::min<uint64_t>(to - from, kMaxSpan - last.length);
          last.length += static_cast<uint32_t>(add);
          from += add;
          continue;
        }
      }
      Instruction instruction;
      instruction.op = Op::kLiteral;
      instruction.offset = from;
      instruction.length = static_cast<uint32_t>(std::min<uint64_t>(to - from, kMaxSpan));
      t_.instructions_.push_back(instruction);
      from += instruction.length;
      coalesce_ = true;
    }
  }

  // Runs the $(...) scanner over the current chunk up to `upto` while inside esi:vars.
  void ScanVars(uint64_t upto) {
    if (upto <= scanned_) return;
    if (vars_depth_ == 0 || chunk_ == nullptr || options_.dialect == Dialect::kVarnish) {
      scanned_ = upto;
      return;
    }
    uint64_t from = std::max(scanned_, chunk_base_);
    for (uint64_t i = from; i < upto; ++i) {
      if (scanner_.Offer(chunk_[i - chunk_base_], i) != VarScanner::Step::kComplete) continue;
      if (pending_refs_.size() >= Parser::kMaxPendingVariables) {
        AddProblem(ProblemKind::kTooManyVariables, i);
        continue;
      }
      PendingRef r;
      r.start = scanner_.start();
      r.end = i + 1;
      if (ParseVarRef(scanner_.text(), &r.ref) == scanner_.text().size())
        pending_refs_.push_back(std::move(r));
    }
    scanned_ = upto;
  }

  void AddProblem(ProblemKind kind, uint64_t offset) {
    if (IsWarning(kind))
      ++t_.warnings_;
    else
      ++t_.errors_;
    if (t_.problems_.size() < Template::kMaxProblemsKept) t_.problems_.push_back({kind, offset});
  }

  static constexpr char kCommentEnd[] = "-->";
  static constexpr char kCdataEnd[] = "]]>";

  ParserOptions options_;
  Template t_;
  State state_ = State::kStart;

  // Input position.
  const char* chunk_ = nullptr;  // the chunk being fed (null between calls)
  uint64_t chunk_base_ = 0;      // offset of its first byte
  uint64_t fed_ = 0;             // bytes fed so far
  uint64_t marked_ = 0;          // [0, marked_) has its mode
  uint64_t scanned_ = 0;         // [0, scanned_) went through the $(...) scanner
  uint64_t tag_start_ = 0;       // offset of the current tag's '<'
  Mode last_mode_ = Mode::kVerbatim;

  // Varnish's flags, with its lifetimes: canattr, the include's src and onerror persist from one
  // ESI tag to the next until something resets them, exactly as in VEP.
  bool esi_found_ = false;
  bool remove_ = false;
  bool in_esi_tag_ = false;
  bool endtag_ = false;
  bool emptytag_ = false;
  bool varnish_canattr_ = false;
  bool esi10_canattr_ = false;  // shellac's elements keep their own (Varnish never sees them)
  bool esi10_tag_ = false;
  bool cmt_armed_ = false;  // inside <!--esi: watching for "-->"
  uint8_t cmt_index_ = 0;
  const char* until_ = kCommentEnd;
  uint8_t until_index_ = 0;

  Matcher matcher_;
  Element element_ = kBogus;
  const Word* attr_table_ = nullptr;
  size_t attr_table_size_ = 0;
  uint8_t attr_id_ = 0;
  bool collecting_ = false;
  bool attr_overflow_ = false;
  char delim_ = 0;
  std::string attr_;

  bool inc_has_src_ = false;
  bool inc_continue_ = false;
  bool inc_has_alt_ = false;
  std::string inc_src_;
  std::string inc_alt_;
  bool when_has_test_ = false;
  std::string when_test_;

  std::array<Block, Parser::kMaxBlockDepth> stack_{};
  size_t depth_ = 0;
  int vars_depth_ = 0;
  bool coalesce_ = false;  // the last instruction is a literal the next one may extend

  VarScanner scanner_;
  std::vector<PendingRef> pending_refs_;
};

Parser::Parser(ParserOptions options) : machine_(std::make_unique<Machine>(options)) {}
Parser::~Parser() = default;
void Parser::Feed(std::string_view chunk) {
  machine_->Feed(chunk);
}
Template Parser::Finish() {
  return machine_->Finish();
}
uint64_t Parser::bytes_fed() const {
  return machine_->fed();
}

Template ParseTemplate(std::string_view body, ParserOptions options) {
  Parser parser(options);
  parser.Feed(body);
  return parser.Finish();
}

std::optional<Template> TemplateOfIncludes(std::string_view body,
                                           std::span<const std::pair<uint64_t, uint64_t>> tags) {
  static constexpr std::string_view kOpen = "<esi:include src=\"", kClose = "\"/>";
  if (tags.empty() || body.empty() || body.front() != '<') return std::nullopt;
  Template t;
  // The parser's literals: [from, to) in runs of at most 4 GiB - 1.
  auto literal = [&t](uint64_t from, uint64_t to) {
    while (from < to) {
      Instruction in;
      in.op = Op::kLiteral;
      in.offset = from;
      in.length = static_cast<uint32_t>(std::min<uint64_t>(to - from, 0xffffffffu));
      t.instructions_.push_back(in);
      from += in.length;
    }
  };
  t.instructions_.reserve(2 * tags.size() + 1);
  t.includes_.reserve(tags.size());
  uint64_t at = 0;
  for (const auto& [begin, end] : tags) {
    if (begin < at || end > body.size() || end < begin + kOpen.size() + kClose.size()) {
      return std::nullopt;
    }
    const std::string_view tag = body.substr(begin, end - begin);
    if (!tag.starts_with(kOpen) || !tag.ends_with(kClose)) return std::nullopt;
    const std::string_view src =
        tag.substr(kOpen.size(), tag.size() - kOpen.size() - kClose.size());
    if (src.empty() || src.size() > Parser::kMaxAttributeLength) return std::nullopt;
    for (const char c : src) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= ' ' || u >= 0x7f || c == '"' || c == '<' || c == '>') return std::nullopt;
    }
    literal(at, begin);
    Include include;
    include.src = Interpolation::Compile(src, /*variables=*/true);
    t.AddInclude(begin, std::move(include));
    at = end;
  }
  literal(at, body.size());
  t.body_length_ = body.size();
  t.esi_ = true;
  return t;
}

}  // namespace shellac::esi
