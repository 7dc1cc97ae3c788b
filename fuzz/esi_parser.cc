// libFuzzer target: the ESI parser (esi/), and the evaluation and assembly of what it parses.
//
// Input: one control byte, then the body. The control byte picks the dialect, the XML check and
// the chunking. Checked on every input:
// - parsing never crashes, hangs or trips ASan/UBSan;
// - a chunked parse gives the same template as the whole body at once;
// - the template is well formed (spans inside the body, block ends nested, indexes valid);
// - evaluation and assembly (includes answered with the same body, some failing) finish, and
//   every output piece lies inside its body.
// The body is also compiled as a test expression and scanned for variable references.
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <string>
#include <string_view>

#include "esi/assembly.h"
#include "esi/evaluate.h"
#include "esi/expr.h"
#include "esi/parser.h"
#include "fuzz/check.h"

namespace {

using namespace shellac::esi;

std::string Fingerprint(const Template& t) {
  std::string out = t.Dump();
  out += t.esi() ? "E" : "V";
  out += std::to_string(t.error_count()) + "/" + std::to_string(t.warning_count());
  for (const Problem& p : t.problems())
    out += " " + std::to_string(static_cast<int>(p.kind)) + "@" + std::to_string(p.offset);
  return out;
}

void CheckWellFormed(const Template& t, size_t body_size) {
  auto instructions = t.instructions();
  FUZZ_CHECK(t.body_length() == body_size);
  uint64_t last_end = 0;
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < instructions.size(); ++i) {
    while (!open.empty() && open.back() <= i) open.pop_back();
    const Instruction& in = instructions[i];
    switch (in.op) {
      case Op::kLiteral:
        FUZZ_CHECK(in.length > 0 && in.offset + in.length <= body_size);
        FUZZ_CHECK(in.offset >= last_end);  // output never goes backwards in the body
        last_end = in.offset + in.length;
        break;
      case Op::kVariable:
        FUZZ_CHECK(in.index() < 1u << 30);
        (void)t.variable(in.index());
        break;
      case Op::kInclude:
        FUZZ_CHECK(in.index() < t.include_count());
        break;
      case Op::kWhen:
        (void)t.expression(in.index());
        [[fallthrough]];
      default:
        FUZZ_CHECK(in.end > i && in.end <= instructions.size());
        FUZZ_CHECK(open.empty() || in.end <= open.back());
        open.push_back(in.end);
        break;
    }
  }
}

class BodyResolver : public Resolver {
 public:
  BodyResolver(std::string_view body, const ParserOptions& options, const RequestContext& context)
      : body_(body), options_(options), context_(context), page_(ParseTemplate(body, options)) {}

  bool Resolve(const Fetch& fetch, Plan* fragment) override {
    size_t hash = std::hash<std::string>()(fetch.location.target);
    if (hash % 3 == 0) return false;
    if (hash % 3 == 1) {
      *fragment = Plan::Verbatim(fetch.location.target.size(), 1);
      return true;
    }
    *fragment = Evaluate(page_, context_, fetch.location, {}, 0);
    return true;
  }

 private:
  std::string_view body_;
  ParserOptions options_;
  const RequestContext& context_;
  Template page_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint8_t control = data[0];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  ParserOptions options;
  options.dialect = (control & 1) ? Dialect::kVarnish : Dialect::kEsi10;
  options.require_xml = (control & 2) == 0;

  Template whole = ParseTemplate(body, options);
  CheckWellFormed(whole, body.size());

  Parser parser(options);
  uint32_t seed = control * 2654435761u + static_cast<uint32_t>(size);
  for (size_t pos = 0; pos < body.size();) {
    seed = seed * 1103515245u + 12345u;
    size_t n = 1 + (seed >> 16) % ((control >> 2) + 1);
    if (n > body.size() - pos) n = body.size() - pos;
    parser.Feed(body.substr(pos, n));
    pos += n;
  }
  Template chunked = parser.Finish();
  FUZZ_CHECK(Fingerprint(whole) == Fingerprint(chunked));

  RequestContext context;
  context.host = "h";
  context.cookie = "a=1; b=<x>";
  context.query = "n=5&q";
  context.accept_language = "en";
  context.user_agent = "Mozilla/5.0 (Windows NT 10.0)";
  EvalOptions eval;
  eval.policy.allow_host = [](std::string_view host, bool) { return host.size() % 2 == 0; };
  Limits limits;
  limits.max_depth = 3;
  limits.max_includes = 16;
  Assembly assembly(Evaluate(whole, context, Location{"h", "/a/b", false}, eval, 0), limits);
  BodyResolver resolver(body, options, context);
  RunToEnd(assembly, resolver, [&](const Piece& piece) {
    if (piece.kind == Piece::kBytes && piece.body == 0)
      FUZZ_CHECK(piece.offset + piece.length <= body.size());
  });

  Expression expression;
  size_t at = 0;
  if (expression.Compile(body.substr(0, 2048), &at)) (void)expression.Evaluate(context);
  std::string expanded;
  Interpolation::Compile(body.substr(0, 2048), true)
      .Expand(context, Interpolation::Escape::kUrl, &expanded);
  return 0;
}
