// template: a compiled ESI page - the instruction list the parser builds once and every delivery
// walks (as Varnish's VEC codes, but with the ESI 1.0 blocks).
//
// Literal text is never copied: a kLiteral instruction names a span of the stored body (identity
// bytes, offsets from its first byte). What a template holds beyond the instruction list is only
// what the markup itself carries: include URLs, test expressions, variable references, and a capped
// list of parse problems.
//
// Blocks (try, attempt, except, choose, when, otherwise) are instructions whose children follow
// them directly; `end` is the index just past the block's last child, so a walker skips a block in
// one step. A try's children are only attempt and except blocks, a choose's only when and otherwise
// blocks: text written directly inside esi:try or esi:choose is not part of the output.
//
// Threads: immutable once Parser::Finish() returns it; any thread may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "esi/expr.h"

namespace shellac::esi {

enum class Op : uint8_t {
  kLiteral,    // body bytes [offset, offset + length)
  kVariable,   // variables()[index]: a $(...) inside esi:vars
  kInclude,    // includes()[index]
  kTry,        // block: kAttempt and kExcept children
  kAttempt,    // block
  kExcept,     // block
  kChoose,     // block: kWhen and kOtherwise children
  kWhen,       // block; expressions()[index] is its test
  kOtherwise,  // block
};

struct Instruction {
  uint64_t offset = 0;  // kLiteral: first byte; others: where the element starts in the body
  uint32_t length = 0;  // kLiteral: byte count (a longer run is split); kVariable, kInclude,
                        // kWhen: index
  uint32_t end = 0;     // blocks: index of the first instruction after the block
  Op op = Op::kLiteral;

  uint32_t index() const { return length; }
};

struct Include {
  Interpolation src;  // as written (entities not yet decoded), with variables compiled
  Interpolation alt;  // empty when there is none
  bool has_alt = false;
  bool continue_on_error = false;  // onerror="continue"
};

// What the parser noticed. None of these fails the page: like Varnish, the parser keeps going and
// the page is delivered with the offending markup handled as described for each kind.
enum class ProblemKind : uint8_t {
  // Varnish's errors and warnings (SLT_ESI_xmlerror), same conditions:
  kNotXml,                 // first non-space byte is not '<': no ESI processing at all
  kUnknownElement,         // <esi:bogus>: the tag is dropped, its content kept
  kIllegalEndTag,          // </esi:include>, </esi:comment>: dropped
  kNestedInRemove,         // an ESI element or <!--esi inside esi:remove (dropped with it)
  kRemoveEmpty,            // <esi:remove/>: ignored
  kRemoveAlreadyOpen,      // <esi:remove> inside esi:remove: ignored
  kRemoveNotOpen,          // </esi:remove> without <esi:remove>: ignored
  kCommentNotEmpty,        // <esi:comment> without the final '/' (still dropped)
  kIncludeNotEmpty,        // warning: <esi:include> without the final '/' (still included)
  kIncludeNoSrc,           // <esi:include> without src: dropped
  kIncludeMultipleSrc,     // two src= attributes: the tag is dropped
  kIncludeSrcWhitespace,   // whitespace in src=: the tag is dropped
  kGreaterNotAfterSlash,   // '/' not followed by '>' in an ESI tag: dropped up to the next '>'
  kBadAttributeStart,      // illegal attribute start: dropped up to the next '>'
  kBadAttributeChar,       // illegal byte in an attribute name: dropped up to the next '>'
  kBadAttributeDelimiter,  // whitespace after '=': dropped up to the next '>'
  kUnterminatedAttribute,  // '>' inside an attribute value: dropped up to that '>'
  kEndedInsideTag,         // the body ends inside a tag
  // shellac's own (ESI 1.0 statements and limits):
  kRemoveUnclosed,    // warning: the body ends inside esi:remove (Varnish says nothing)
  kMisplacedElement,  // e.g. esi:attempt outside esi:try, esi:when outside esi:choose:
                      // the tag is ignored, its content kept
  kDuplicateElement,  // a second attempt/except/otherwise in one block: ignored
  kUnmatchedEndTag,   // </esi:try> etc. with no open element of that name: ignored
  kUnclosedElement,   // a block closed implicitly (by an outer end tag or the end of body)
  kMissingTest,       // esi:when without test=: never true
  kBadTest,           // test= does not compile: never true
  kTooDeep,           // blocks nested deeper than Parser::kMaxBlockDepth: tag ignored
  kAttributeTooLong,  // an attribute value longer than Parser::kMaxAttributeLength: tag dropped
  kTooManyVariables,  // too many $(...) waiting in one construct: the rest stay literal
  kIncludeMisplaced,  // esi:include directly inside esi:try or esi:choose: dropped
};

struct Problem {
  ProblemKind kind;
  uint64_t offset;  // byte offset in the body where it was noticed
};

const char* ProblemName(ProblemKind kind);
// Warnings in Varnish's sense (and shellac's own warnings); the rest count as errors.
bool IsWarning(ProblemKind kind);

class Template {
 public:
  // Problems kept in full; beyond that only counted.
  static constexpr size_t kMaxProblemsKept = 32;

  Template() = default;
  Template(Template&&) noexcept = default;
  Template& operator=(Template&&) noexcept = default;
  Template(const Template&) = delete;
  Template& operator=(const Template&) = delete;

  // False when the body has no ESI markup (or is not XML): it is then delivered exactly as
  // stored, and instructions() is one literal over the whole body (none when empty). This is
  // Varnish's rule: a body in which the parser found nothing is not touched, even where it would
  // have changed bytes (an unterminated "<!--esi", say).
  bool esi() const { return esi_; }
  uint64_t body_length() const { return body_length_; }

  std::span<const Instruction> instructions() const { return instructions_; }
  const Include& include(uint32_t index) const { return includes_[index]; }
  const Expression& expression(uint32_t index) const { return expressions_[index]; }
  const VarRef& variable(uint32_t index) const { return variables_[index]; }
  size_t include_count() const { return includes_.size(); }

  std::span<const Problem> problems() const { return problems_; }
  uint32_t error_count() const { return errors_; }
  uint32_t warning_count() const { return warnings_; }

  // Heap bytes this template holds (the store charges them).
  size_t memory_bytes() const;

  // One line per instruction, indented by block depth; for tests and debugging.
  std::string Dump() const;

 private:
  friend class Parser;
  friend std::optional<Template> TemplateOfIncludes(
      std::string_view body, std::span<const std::pair<uint64_t, uint64_t>> tags);

  // Appends `include` and the instruction that delivers it, the tag standing at body offset
  // `offset`: how the parser and TemplateOfIncludes both add an include.
  void AddInclude(uint64_t offset, Include include) {
    Instruction instruction;
    instruction.op = Op::kInclude;
    instruction.offset = offset;
    instruction.length = static_cast<uint32_t>(includes_.size());
    includes_.push_back(std::move(include));
    instructions_.push_back(instruction);
  }

  std::vector<Instruction> instructions_;
  std::vector<Include> includes_;
  std::vector<Expression> expressions_;
  std::vector<VarRef> variables_;
  std::vector<Problem> problems_;
  uint64_t body_length_ = 0;
  uint32_t errors_ = 0;
  uint32_t warnings_ = 0;
  bool esi_ = false;
};

}  // namespace shellac::esi
