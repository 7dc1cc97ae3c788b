// parser: a byte-level streaming ESI parser. Feed it a body in chunks of any size as they arrive
// (identity bytes: inflate gzip first); Finish() returns the compiled Template.
//
// Contract:
// - Any split of a body into chunks gives the same Template as the whole body in one chunk.
// - Linear time; no allocation per byte. Working memory is bounded (a few small fixed buffers plus
//   one attribute value of at most kMaxAttributeLength); the template grows only with the markup.
// - Survives any input. Problems are recorded with their byte offset (Template::problems()) and
//   never fail the page.
// - For the statements Varnish Cache 7 has (esi:include, esi:remove, esi:comment, <!--esi -->) the
//   template delivers, byte for byte, what varnishd 7.1 delivers for the same body - malformed
//   markup included, quirks included (see esi/README.md "Varnish compatibility"). This parser does
//   not copy Varnish's code; it reproduces the behaviour of its state machine
//   (bin/varnishd/cache/cache_esi_parse.c), which tests/esi_differential_test.cc checks against
//   the real varnishd.
// - On top of that, in the default dialect: esi:try/attempt/except, esi:choose/when/otherwise,
//   esi:vars with $(...) substitution, variables in include src/alt, include alt=.
//
// Threads: a Parser is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "esi/template.h"

namespace shellac::esi {

enum class Dialect : uint8_t {
  kEsi10,    // ESI 1.0 (the W3C note): everything
  kVarnish,  // only what Varnish 7 knows: include (src, onerror), remove, comment, <!--esi -->;
             // every other esi: element is unknown, $(...) is plain text
};

struct ParserOptions {
  Dialect dialect = Dialect::kEsi10;
  // Varnish's check (feature esi_disable_xml_check off): a body whose first byte that is not
  // whitespace is not '<' is not processed.
  bool require_xml = true;
};

class Parser {
 public:
  static constexpr size_t kMaxAttributeLength = 8192;
  static constexpr size_t kMaxBlockDepth = 32;
  // $(...) references found inside esi:vars wait until the bytes around them are known to be
  // output; at most this many may wait inside one markup construct.
  static constexpr size_t kMaxPendingVariables = 256;

  explicit Parser(ParserOptions options = {});
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // The next bytes of the body. Empty chunks are allowed.
  void Feed(std::string_view chunk);
  // The end of the body. The parser is spent afterwards.
  Template Finish();

  uint64_t bytes_fed() const;

 private:
  class Machine;
  std::unique_ptr<Machine> machine_;
};

// Parses a whole body at once.
Template ParseTemplate(std::string_view body, ParserOptions options = {});

// ParseTemplate's template (default options) for a body whose only ESI markup is the
// `<esi:include src="URL"/>` tags at `tags` ([begin, end) byte ranges, in order), as the renderer
// that wrote them knows: made from the ranges without reading the rest of the body, which the
// caller vouches holds no other ESI markup. nullopt when the body does not start with '<', or a
// range is not such a tag, or its URL is empty or holds a byte the parser might treat otherwise
// (a quote, '<', '>', whitespace, a control byte, a byte above ASCII): the caller parses instead.
std::optional<Template> TemplateOfIncludes(std::string_view body,
                                           std::span<const std::pair<uint64_t, uint64_t>> tags);

}  // namespace shellac::esi
