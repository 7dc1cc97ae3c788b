// esi/: golden tests for every statement, variable, expression operator and error path, the
// assembly's scheduling and failure rules, and the chunking property (any split of a body gives
// the same template and output as one chunk).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "esi/assembly.h"
#include "esi/evaluate.h"
#include "esi/expr.h"
#include "esi/parser.h"

namespace shellac::esi {
namespace {

using namespace std::string_literals;

// An in-memory origin: paths to bodies, some paths failing. Renders a page to a string.
class Site {
 public:
  Site() {
    context.host = "example.com";
    context.cookie = "user=ann; theme=dark; empty=";
    context.query = "n=7&q=a%20b&flag";
    context.referer = "http://ref.example/";
    context.user_agent = "Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0";
    context.accept_language = "en-GB,fr;q=0.5,de;q=0";
  }

  void Add(const std::string& path, std::string body) { files_[path] = std::move(body); }
  void FailOn(const std::string& path) { failing_.insert(path); }

  // The page's output; *ok is false when the page failed.
  std::string Render(std::string_view page, const std::string& target = "/dir/page.html",
                     bool* ok = nullptr) {
    fetched.clear();
    bodies_.clear();
    Location base{"example.com", target, false};
    Assembly assembly(PlanFor(std::string(page), base), limits);
    SiteResolver resolver(this);
    std::string out;
    bool result = RunToEnd(assembly, resolver, [&](const Piece& piece) {
      if (piece.kind == Piece::kText)
        out.append(piece.text);
      else
        out.append(bodies_[piece.body], piece.offset, piece.length);
    });
    issues.assign(assembly.issues().begin(), assembly.issues().end());
    if (ok != nullptr)
      *ok = result;
    else
      EXPECT_TRUE(result) << "page failed";
    return out;
  }

  RequestContext context;
  EvalOptions options;
  Limits limits;
  ParserOptions parser;
  std::vector<std::string> fetched;  // "host target" of each fetch, in order
  std::vector<EvalIssue> issues;

 private:
  class SiteResolver : public Resolver {
   public:
    explicit SiteResolver(Site* site) : site_(site) {}
    bool Resolve(const Fetch& fetch, Plan* fragment) override {
      return site_->Fetch(fetch, fragment);
    }

   private:
    Site* site_;
  };

  Plan PlanFor(std::string body, const Location& base) {
    bodies_.push_back(std::move(body));
    Template page = ParseTemplate(bodies_.back(), parser);
    return Evaluate(page, context, base, options, bodies_.size() - 1);
  }

  bool Fetch(const esi::Fetch& fetch, Plan* fragment) {
    const Location& at = fetch.location;
    fetched.push_back(at.host + " " + at.target);
    std::string path = at.target.substr(0, at.target.find('?'));
    if (failing_.count(path) > 0) return false;
    std::string body;
    if (path == "/echo/url") {
      body = at.target;
    } else if (path == "/echo/host") {
      body = at.host;
    } else {
      auto it = files_.find(path);
      if (it == files_.end()) return false;  // 404
      body = it->second;
    }
    *fragment = PlanFor(std::move(body), at);
    return true;
  }

  std::map<std::string, std::string> files_;
  std::set<std::string> failing_;
  std::deque<std::string> bodies_;
};

std::vector<ProblemKind> Kinds(const Template& t) {
  std::vector<ProblemKind> kinds;
  for (const Problem& p : t.problems()) kinds.push_back(p.kind);
  return kinds;
}

bool Has(const Template& t, ProblemKind kind) {
  auto kinds = Kinds(t);
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

// Everything observable about a template, for comparing two parses.
std::string Fingerprint(const Template& t) {
  std::string out = t.Dump();
  out += t.esi() ? "esi\n" : "verbatim\n";
  out += std::to_string(t.body_length()) + " " + std::to_string(t.error_count()) + " " +
         std::to_string(t.warning_count()) + "\n";
  for (const Problem& p : t.problems())
    out += std::to_string(static_cast<int>(p.kind)) + "@" + std::to_string(p.offset) + "\n";
  return out;
}

Template ParseChunks(std::string_view body, const std::vector<size_t>& cuts,
                     ParserOptions options = {}) {
  Parser parser(options);
  size_t from = 0;
  for (size_t cut : cuts) {
    parser.Feed(body.substr(from, cut - from));
    from = cut;
  }
  parser.Feed(body.substr(from));
  return parser.Finish();
}

// ---------------------------------------------------------------------------------------------
// Parser: what Varnish has

TEST(EsiParser, PlainBodyIsVerbatim) {
  Template t = ParseTemplate("<p>hello</p>");
  EXPECT_FALSE(t.esi());
  ASSERT_EQ(t.instructions().size(), 1u);
  EXPECT_EQ(t.instructions()[0].op, Op::kLiteral);
  EXPECT_EQ(t.instructions()[0].length, 12u);
  EXPECT_EQ(t.body_length(), 12u);
}

TEST(EsiParser, EmptyBody) {
  Template t = ParseTemplate("");
  EXPECT_FALSE(t.esi());
  EXPECT_TRUE(t.instructions().empty());
  EXPECT_EQ(t.error_count(), 0u);
}

TEST(EsiParser, NotXmlIsNotProcessed) {
  Site site;
  EXPECT_EQ(site.Render("hi <esi:include src=\"/a\"/>"), "hi <esi:include src=\"/a\"/>");
  Template t = ParseTemplate("hi <esi:include src=\"/a\"/>");
  EXPECT_FALSE(t.esi());
  EXPECT_TRUE(Has(t, ProblemKind::kNotXml));
  // A BOM is not '<' either (Varnish's esi_remove_bom is off by default).
  EXPECT_FALSE(ParseTemplate("\xef\xbb\xbf<esi:include src=\"/a\"/>").esi());
  // Unless the check is off.
  ParserOptions lax;
  lax.require_xml = false;
  EXPECT_TRUE(ParseTemplate("hi <esi:include src=\"/a\"/>", lax).esi());
}

TEST(EsiParser, LeadingWhitespaceThenMarkup) {
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render(" \r\n\t<p><esi:include src=\"/a\"/></p>"), " \r\n\t<p>A</p>");
}

TEST(EsiInclude, Forms) {
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<p><esi:include src=\"/a\"/></p>"), "<p>A</p>");
  EXPECT_EQ(site.Render("<p><esi:include src='/a'/></p>"), "<p>A</p>");
  EXPECT_EQ(site.Render("<p><esi:include src=/a /></p>"), "<p>A</p>");
  EXPECT_EQ(site.Render("<p><esi:include\r\n src=\"/a\"\t/></p>"), "<p>A</p>");
  Template t = ParseTemplate("<p><esi:include src=\"/a\"></p>");
  EXPECT_TRUE(Has(t, ProblemKind::kIncludeNotEmpty));
  EXPECT_EQ(t.warning_count(), 1u);
  EXPECT_EQ(site.Render("<p><esi:include src=\"/a\"></p>"), "<p>A</p>");
}

// A renderer that wrote its include tags gets ParseTemplate's template from their places alone.
void ExpectSameTemplate(const Template& a, const Template& b) {
  ASSERT_EQ(a.esi(), b.esi());
  EXPECT_EQ(a.body_length(), b.body_length());
  EXPECT_EQ(a.Dump(), b.Dump());
  ASSERT_EQ(a.instructions().size(), b.instructions().size());
  for (size_t i = 0; i < a.instructions().size(); ++i) {
    const Instruction &x = a.instructions()[i], &y = b.instructions()[i];
    EXPECT_EQ(x.op, y.op) << i;
    EXPECT_EQ(x.offset, y.offset) << i;
    EXPECT_EQ(x.length, y.length) << i;
    EXPECT_EQ(x.end, y.end) << i;
  }
  ASSERT_EQ(a.include_count(), b.include_count());
  for (uint32_t i = 0; i < a.include_count(); ++i) {
    EXPECT_EQ(a.include(i).src.raw(), b.include(i).src.raw());
    EXPECT_EQ(a.include(i).src.has_variables(), b.include(i).src.has_variables());
    EXPECT_EQ(a.include(i).has_alt, b.include(i).has_alt);
    EXPECT_EQ(a.include(i).continue_on_error, b.include(i).continue_on_error);
  }
  EXPECT_EQ(a.error_count(), b.error_count());
  EXPECT_EQ(a.warning_count(), b.warning_count());
}

TEST(EsiInclude, TemplateOfKnownIncludesIsTheParsedOne) {
  const std::string tag1 = "<esi:include src=\"/r/esi-diff/?id=ab&amp;context=5\"/>";
  const std::string tag2 = "<esi:include src=\"/r/esi-blob/f.c?id=cd$(HTTP_HOST)\"/>";
  for (const std::string& before : {"<!DOCTYPE html>\n<p>"s, "<p>"s}) {
    for (const std::string& between : {""s, "<!-- a comment --><b>x</b>"s}) {
      for (const std::string& after : {""s, "</p>\n"s}) {
        const std::string body = before + tag1 + between + tag2 + after;
        const uint64_t b1 = before.size(), e1 = b1 + tag1.size();
        const uint64_t b2 = e1 + between.size(), e2 = b2 + tag2.size();
        const std::pair<uint64_t, uint64_t> both[] = {{b1, e1}, {b2, e2}};
        SCOPED_TRACE(body);
        const std::optional<Template> known = TemplateOfIncludes(body, both);
        ASSERT_TRUE(known);
        ExpectSameTemplate(*known, ParseTemplate(body));
        const std::pair<uint64_t, uint64_t> first[] = {{b1, e1}};
        const std::string one = before + tag1 + after;
        ExpectSameTemplate(*TemplateOfIncludes(one, first), ParseTemplate(one));
      }
    }
  }
  // Anything else is left to the parser.
  const std::string body = "<p>" + tag1 + "</p>";
  const std::pair<uint64_t, uint64_t> right[] = {{3, 3 + tag1.size()}};
  EXPECT_TRUE(TemplateOfIncludes(body, right));
  EXPECT_FALSE(TemplateOfIncludes(body, {}));
  const std::pair<uint64_t, uint64_t> shifted[] = {{2, 2 + tag1.size()}};
  EXPECT_FALSE(TemplateOfIncludes(body, shifted));
  const std::pair<uint64_t, uint64_t> past[] = {{3, body.size() + 1}};
  EXPECT_FALSE(TemplateOfIncludes(body, past));
  const std::pair<uint64_t, uint64_t> twice[] = {right[0], right[0]};
  EXPECT_FALSE(TemplateOfIncludes(body, twice));
  EXPECT_FALSE(TemplateOfIncludes(" " + body, std::span(shifted)));  // not '<' first
  for (const std::string& src : {""s, "/a b"s, "/a\tb"s, "/a>b"s, "/a<b"s, "/a\xc3\xa9"s}) {
    const std::string odd = "<p><esi:include src=\"" + src + "\"/></p>";
    const std::pair<uint64_t, uint64_t> tag[] = {{3, odd.size() - 4}};
    EXPECT_FALSE(TemplateOfIncludes(odd, tag)) << src;
  }
}

TEST(EsiInclude, WithoutSrcIsDropped) {
  Site site;
  EXPECT_EQ(site.Render("<p>a<esi:include/>b</p>"), "<p>ab</p>");
  EXPECT_TRUE(Has(ParseTemplate("<p>a<esi:include/>b</p>"), ProblemKind::kIncludeNoSrc));
}

TEST(EsiInclude, MultipleSrcDropsTheTag) {
  Site site;
  site.Add("/a", "A");
  std::string page = "<p>a<esi:include src=\"/a\" src=\"/a\"/>b</p>";
  EXPECT_EQ(site.Render(page), "<p>ab</p>");
  EXPECT_TRUE(Has(ParseTemplate(page), ProblemKind::kIncludeMultipleSrc));
}

TEST(EsiInclude, WhitespaceInSrcDropsTheTag) {
  Site site;
  site.Add("/a", "A");
  std::string page = "<p>a<esi:include src=\"/a b\"/>b</p>";
  EXPECT_EQ(site.Render(page), "<p>ab</p>");
  EXPECT_TRUE(Has(ParseTemplate(page), ProblemKind::kIncludeSrcWhitespace));
}

TEST(EsiInclude, StaleSrcCarriesOverLikeVarnish) {
  // A tag dropped after its src= keeps that src for the next include (Varnish's VEP does).
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<p>1<esi:include src=\"/a\" !>2<esi:include/>3</p>"), "<p>12A3</p>");
}

TEST(EsiInclude, CanattrPersistsLikeVarnish) {
  Site site;
  site.Add("/a", "A");
  site.Add("/b", "B");
  // After a tag that ended without '/', an attribute may follow the name directly.
  EXPECT_EQ(site.Render("<p><esi:include src=\"/a\">|<esi:includesrc=\"/b\"/></p>"), "<p>A|B</p>");
  // After one that ended with '/', it may not.
  std::string page = "<p><esi:include src=\"/a\"/>|<esi:includesrc=\"/b\"/>x</p>";
  EXPECT_EQ(site.Render(page), "<p>A|x</p>");
  EXPECT_TRUE(Has(ParseTemplate(page), ProblemKind::kBadAttributeStart));
}

TEST(EsiInclude, AttributeErrors) {
  Site site;
  site.Add("/a", "A");
  struct Case {
    std::string page;
    std::string out;
    ProblemKind kind;
  } cases[] = {
      {"<p>a<esi:include src=\"/a>b\"/>c</p>", "<p>ab\"/>c</p>",
       ProblemKind::kUnterminatedAttribute},
      {"<p>a<esi:include src=\"/a\"/ >b</p>", "<p>ab</p>", ProblemKind::kGreaterNotAfterSlash},
      {"<p>a<esi:include 9src=\"/a\"/>b</p>", "<p>ab</p>", ProblemKind::kBadAttributeStart},
      {"<p>a<esi:include src@=\"/a\"/>b</p>", "<p>ab</p>", ProblemKind::kBadAttributeChar},
      {"<p>a<esi:include src= \"/a\"/>b</p>", "<p>ab</p>", ProblemKind::kBadAttributeDelimiter},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(site.Render(c.page), c.out) << c.page;
    EXPECT_TRUE(Has(ParseTemplate(c.page), c.kind)) << c.page;
  }
}

TEST(EsiInclude, EndTagIsIllegal) {
  Site site;
  site.Add("/a", "A");
  std::string page = "<p><esi:include src=\"/a\"></esi:include></p>";
  EXPECT_EQ(site.Render(page), "<p>A</p>");
  EXPECT_TRUE(Has(ParseTemplate(page), ProblemKind::kIllegalEndTag));
}

TEST(EsiInclude, OnerrorAndAltAreParsed) {
  Template t = ParseTemplate("<esi:include src=\"/a\" alt=\"/b\" onerror=\"continue\"/>");
  ASSERT_EQ(t.include_count(), 1u);
  EXPECT_EQ(t.include(0).src.raw(), "/a");
  EXPECT_TRUE(t.include(0).has_alt);
  EXPECT_EQ(t.include(0).alt.raw(), "/b");
  EXPECT_TRUE(t.include(0).continue_on_error);
  Template u = ParseTemplate("<esi:include src=\"/a\" onerror=\"stop\"/>");
  EXPECT_FALSE(u.include(0).continue_on_error);
}

TEST(EsiInclude, NulEndsSrc) {
  Site site;
  EXPECT_EQ(site.Render("<p><esi:include src=\"/echo/url\0 x\"/></p>"s), "<p>/echo/url</p>");
}

TEST(EsiInclude, EntitiesAreDecodedInSrc) {
  Site site;
  EXPECT_EQ(
      site.Render("<p><esi:include src=\"/echo/url?a=1&amp;b=&lt;&gt;&quot;&apos;&x;\"/></p>"),
      "<p>/echo/url?a=1&b=<>\"'&x;</p>");
}

TEST(EsiInclude, UrlResolution) {
  Location base{"example.com", "/a/b/c.html?x=/y", false};
  Location out;
  EXPECT_EQ(ResolveSrc("d.html", base, &out), Resolution::kOk);
  EXPECT_EQ(out.target, "/a/b/d.html");
  EXPECT_EQ(out.host, "example.com");
  EXPECT_EQ(ResolveSrc("../d", base, &out), Resolution::kOk);
  EXPECT_EQ(out.target, "/a/b/../d");
  EXPECT_EQ(ResolveSrc("", base, &out), Resolution::kOk);
  EXPECT_EQ(out.target, "/a/b/");
  EXPECT_EQ(ResolveSrc("/z?q", base, &out), Resolution::kOk);
  EXPECT_EQ(out.target, "/z?q");
  EXPECT_EQ(ResolveSrc("http://other/p?x&amp;y", base, &out), Resolution::kOk);
  EXPECT_EQ(out.host, "other");
  EXPECT_EQ(out.target, "/p?x&y");
  EXPECT_EQ(ResolveSrc("http:///p", base, &out), Resolution::kOk);
  EXPECT_EQ(out.host, "");
  EXPECT_EQ(ResolveSrc("http://other", base, &out), Resolution::kInvalid);
  EXPECT_EQ(ResolveSrc("https://other/p", base, &out), Resolution::kHttps);
  EXPECT_EQ(ResolveSrc("http://", base, &out), Resolution::kOk);  // 7 bytes: relative
  EXPECT_EQ(out.target, "/a/b/http://");
  EXPECT_EQ(ResolveSrc("HTTP://x/y", base, &out), Resolution::kOk);
  EXPECT_EQ(out.target, "/a/b/HTTP://x/y");
  Location root{"h", "/", false};
  EXPECT_EQ(ResolveSrc("x", root, &out), Resolution::kOk);
  EXPECT_EQ(out.target, "/x");
}

TEST(EsiInclude, HostPolicy) {
  Site site;
  site.Add("/alt", "ALT");
  // The page's own host is always allowed, case-insensitively.
  EXPECT_EQ(site.Render("<p><esi:include src=\"http://EXAMPLE.com/echo/host\"/></p>"),
            "<p>EXAMPLE.com</p>");
  // Another host is refused: a failed fetch (alt, then onerror).
  EXPECT_EQ(site.Render("<p><esi:include src=\"http://evil/echo/host\" alt=\"/alt\"/></p>"),
            "<p>ALT</p>");
  EXPECT_EQ(site.fetched, std::vector<std::string>{"example.com /alt"});
  bool ok = true;
  site.Render("<p><esi:include src=\"http://evil/x\"/></p>", "/", &ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(site.Render("<p>a<esi:include src=\"http://evil/x\" onerror=\"continue\"/>b</p>"),
            "<p>ab</p>");
  // Unless the config hook allows it.
  site.options.policy.allow_host = [](std::string_view host, bool https) {
    return host == "friend" && !https;
  };
  EXPECT_EQ(site.Render("<p><esi:include src=\"http://friend/echo/host\"/></p>"), "<p>friend</p>");
}

TEST(EsiInclude, HttpsIsIgnoredUnlessAllowed) {
  Site site;
  EXPECT_EQ(site.Render("<p>a<esi:include src=\"https://example.com/echo/url\"/>b</p>"),
            "<p>ab</p>");
  ASSERT_FALSE(site.issues.empty());
  EXPECT_EQ(site.issues[0].kind, EvalIssueKind::kHttpsIgnored);
  EXPECT_TRUE(site.fetched.empty());
  site.options.policy.allow_host = [](std::string_view, bool https) { return https; };
  EXPECT_EQ(site.Render("<p><esi:include src=\"https://example.com/echo/url\"/></p>"),
            "<p>/echo/url</p>");
}

TEST(EsiInclude, HttpWithoutPathIsDropped) {
  Site site;
  EXPECT_EQ(site.Render("<p>a<esi:include src=\"http://example.com\"/>b</p>"), "<p>ab</p>");
  ASSERT_EQ(site.issues.size(), 1u);
  EXPECT_EQ(site.issues[0].kind, EvalIssueKind::kInvalidUrl);
}

TEST(EsiInclude, Nested) {
  Site site;
  site.Add("/a/x.html", "<i><esi:include src=\"y.html\"/></i>");
  site.Add("/a/y.html", "Y");
  EXPECT_EQ(site.Render("<p><esi:include src=\"/a/x.html\"/></p>"), "<p><i>Y</i></p>");
  EXPECT_EQ(site.fetched,
            (std::vector<std::string>{"example.com /a/x.html", "example.com /a/y.html"}));
}

TEST(EsiInclude, FragmentThatIsNotMarkupIsNotProcessed) {
  Site site;
  site.Add("/t", "text <esi:include src=\"/t\"/>");
  EXPECT_EQ(site.Render("<p><esi:include src=\"/t\"/></p>"),
            "<p>text <esi:include src=\"/t\"/></p>");
}

// ---------------------------------------------------------------------------------------------
// remove, comment, <!--esi -->, unknown elements, CDATA, comments

TEST(EsiRemove, DropsContent) {
  Site site;
  EXPECT_EQ(site.Render("<p>a<esi:remove><b>x</b><!-- c --></esi:remove>b</p>"), "<p>ab</p>");
}

TEST(EsiRemove, Errors) {
  Site site;
  std::string nested = "<p>a<esi:remove>x<esi:remove>y</esi:remove>z</esi:remove>b</p>";
  EXPECT_EQ(site.Render(nested), "<p>azb</p>");
  Template t = ParseTemplate(nested);
  EXPECT_TRUE(Has(t, ProblemKind::kRemoveAlreadyOpen));
  EXPECT_TRUE(Has(t, ProblemKind::kRemoveNotOpen));
  EXPECT_TRUE(Has(ParseTemplate("<p><esi:remove/></p>"), ProblemKind::kRemoveEmpty));
  EXPECT_EQ(site.Render("<p>a<esi:remove/>b</p>"), "<p>ab</p>");
  Template open = ParseTemplate("<p>a<esi:remove>x");
  EXPECT_TRUE(Has(open, ProblemKind::kRemoveUnclosed));
  EXPECT_EQ(site.Render("<p>a<esi:remove>x<p>y</p>"), "<p>a");
}

TEST(EsiRemove, IncludeAndCommentInsideAreErrors) {
  Site site;
  std::string page =
      "<p>a<esi:remove><esi:include src=\"/x\"/><esi:comment text=\"c\"/><!--esi x-->"
      "</esi:remove>b</p>";
  EXPECT_EQ(site.Render(page), "<p>ab</p>");
  EXPECT_EQ(Kinds(ParseTemplate(page)),
            (std::vector<ProblemKind>{ProblemKind::kNestedInRemove, ProblemKind::kNestedInRemove,
                                      ProblemKind::kNestedInRemove}));
  EXPECT_TRUE(site.fetched.empty());
}

TEST(EsiComment, IsDropped) {
  Site site;
  EXPECT_EQ(site.Render("<p>a<esi:comment text=\"hi\"/>b</p>"), "<p>ab</p>");
  std::string open = "<p>a<esi:comment text=\"x\">b</esi:comment>c</p>";
  EXPECT_EQ(site.Render(open), "<p>abc</p>");
  Template t = ParseTemplate(open);
  EXPECT_TRUE(Has(t, ProblemKind::kCommentNotEmpty));
  EXPECT_TRUE(Has(t, ProblemKind::kIllegalEndTag));
}

TEST(EsiCommentBlock, ContentIsProcessed) {
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<p>1<!--esi <b>2</b> -->3<!--esi<esi:include src=\"/a\"/>-->4</p>"),
            "<p>1 <b>2</b> 3A4</p>");
}

TEST(EsiCommentBlock, VarnishQuirks) {
  Site site;
  // "--->" does not close (the search restarts after a mismatching byte).
  EXPECT_EQ(site.Render("<p>a<!--esi b --->c-->d</p>"), "<p>a b --->cd</p>");
  // A plain comment inside disarms it: its "-->" is then text.
  EXPECT_EQ(site.Render("<p><esi:comment text=\"\"/>a<!--esi b<!-- c -->d-->e</p>"),
            "<p>a b<!-- c -->d-->e</p>");
  // Unterminated and nothing else ESI: the body is not touched at all.
  EXPECT_FALSE(ParseTemplate("<p>a<!--esi b</p>").esi());
  EXPECT_EQ(site.Render("<p>a<!--esi b</p>"), "<p>a<!--esi b</p>");
}

TEST(EsiUnknown, ElementsAreDroppedContentKept) {
  Site site;
  std::string page = "<p>a<esi:foo x=\"1\">b</esi:foo>c<esi:>d</p>";
  EXPECT_EQ(site.Render(page), "<p>abcd</p>");
  EXPECT_EQ(ParseTemplate(page).error_count(), 3u);
  EXPECT_TRUE(Has(ParseTemplate(page), ProblemKind::kUnknownElement));
}

TEST(EsiParser, CdataAndCommentsAreNotProcessed) {
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<p><![CDATA[<esi:include src=\"/a\"/>]]><esi:include src=\"/a\"/></p>"),
            "<p><![CDATA[<esi:include src=\"/a\"/>]]>A</p>");
  EXPECT_EQ(
      site.Render("<p><!-- <esi:include src=\"/a\"/> --><!----><esi:include src=\"/a\"/></p>"),
      "<p><!-- <esi:include src=\"/a\"/> --><!---->A</p>");
  // "]]]>" does not close CDATA either.
  EXPECT_EQ(
      site.Render("<p><![CDATA[x]]]><esi:include src=\"/a\"/>]]><esi:include src=\"/a\"/></p>"),
      "<p><![CDATA[x]]]><esi:include src=\"/a\"/>]]>A</p>");
}

TEST(EsiParser, UppercaseIsNotEsi) {
  Site site;
  EXPECT_EQ(site.Render("<p><ESI:include src=\"/a\"/></p>"), "<p><ESI:include src=\"/a\"/></p>");
}

TEST(EsiParser, BodyEndingInsideATag) {
  Site site;
  site.Add("/a", "A");
  Template t = ParseTemplate("<p>a<esi:include src=\"/a\"/>b<esi:include src=\"/a");
  EXPECT_TRUE(Has(t, ProblemKind::kEndedInsideTag));
  EXPECT_EQ(site.Render("<p>a<esi:include src=\"/a\"/>b<esi:include src=\"/a"), "<p>aAb");
  // Right after "<esi:" Varnish has not yet entered the tag: those bytes stay.
  EXPECT_EQ(site.Render("<p>a<esi:comment text=\"x\"/>b<esi:"), "<p>ab<esi:");
  EXPECT_EQ(site.Render("<p>a<esi:comment text=\"x\"/>b<!--esi"), "<p>ab<!--esi");
  EXPECT_EQ(site.Render("<p>a<esi:comment text=\"x\"/>b<"), "<p>ab<");
  EXPECT_EQ(site.Render("<p>a<esi:comment text=\"x\"/>b<a href=\"x"), "<p>ab<a href=\"x");
}

// ---------------------------------------------------------------------------------------------
// ESI 1.0: try, choose, vars, variables, expressions

TEST(EsiTry, AttemptSucceeds) {
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<p><esi:try><esi:attempt>[<esi:include src=\"/a\"/>]</esi:attempt>"
                        "<esi:except>E<esi:include src=\"/e\"/></esi:except></esi:try></p>"),
            "<p>[A]</p>");
  EXPECT_EQ(site.fetched, std::vector<std::string>{"example.com /a"});  // except never fetched
}

TEST(EsiTry, AttemptFailsExceptRuns) {
  Site site;
  site.Add("/e", "E!");
  EXPECT_EQ(site.Render("<p><esi:try><esi:attempt>[<esi:include src=\"/missing\"/>]</esi:attempt>"
                        "<esi:except>(<esi:include src=\"/e\"/>)</esi:except></esi:try></p>"),
            "<p>(E!)</p>");
}

TEST(EsiTry, FailureInsideAFragmentReachesTheAttempt) {
  Site site;
  site.Add("/frag", "<i><esi:include src=\"/missing\"/></i>");
  EXPECT_EQ(site.Render("<p><esi:try><esi:attempt><esi:include src=\"/frag\"/></esi:attempt>"
                        "<esi:except>E</esi:except></esi:try></p>"),
            "<p>E</p>");
}

TEST(EsiTry, NestedTries) {
  Site site;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<esi:try><esi:attempt>1<esi:try><esi:attempt><esi:include src=\"/x\"/>"
                        "</esi:attempt><esi:except>inner<esi:include src=\"/a\"/></esi:except>"
                        "</esi:try>2</esi:attempt><esi:except>outer</esi:except></esi:try>"),
            "1innerA2");
  // An except that fails fails the enclosing attempt.
  EXPECT_EQ(site.Render("<esi:try><esi:attempt>1<esi:try><esi:attempt><esi:include src=\"/x\"/>"
                        "</esi:attempt><esi:except><esi:include src=\"/y\"/></esi:except>"
                        "</esi:try>2</esi:attempt><esi:except>outer</esi:except></esi:try>"),
            "outer");
}

TEST(EsiTry, ExceptFailingOutsideAnyAttemptFailsThePage) {
  Site site;
  bool ok = true;
  site.Render(
      "<esi:try><esi:attempt><esi:include src=\"/x\"/></esi:attempt>"
      "<esi:except><esi:include src=\"/y\"/></esi:except></esi:try>",
      "/", &ok);
  EXPECT_FALSE(ok);
}

TEST(EsiTry, TextDirectlyInTryIsDropped) {
  Site site;
  EXPECT_EQ(site.Render("<esi:try> x <esi:attempt>A</esi:attempt> y <esi:except>E</esi:except> z"
                        "</esi:try>"),
            "A");
  // Without an except, a failed attempt gives nothing.
  EXPECT_EQ(site.Render(
                "<p><esi:try><esi:attempt>A<esi:include src=\"/x\"/></esi:attempt></esi:try></p>"),
            "<p></p>");
}

TEST(EsiTry, MisplacedAndDuplicate) {
  Template t = ParseTemplate(
      "<p><esi:attempt>a</esi:attempt><esi:try><esi:attempt>1</esi:attempt>"
      "<esi:attempt>2</esi:attempt><esi:include src=\"/x\"/></esi:try></esi:try></p>");
  EXPECT_TRUE(Has(t, ProblemKind::kMisplacedElement));
  EXPECT_TRUE(Has(t, ProblemKind::kDuplicateElement));
  EXPECT_TRUE(Has(t, ProblemKind::kIncludeMisplaced));
  EXPECT_TRUE(Has(t, ProblemKind::kUnmatchedEndTag));
  Site site;
  EXPECT_EQ(site.Render("<p><esi:attempt>a</esi:attempt><esi:try><esi:attempt>1</esi:attempt>"
                        "<esi:attempt>2</esi:attempt></esi:try></p>"),
            "<p>a1</p>");
}

TEST(EsiTry, UnclosedBlocks) {
  Site site;
  std::string page = "<esi:try><esi:attempt>A<esi:choose><esi:otherwise>O</esi:try>B";
  Template t = ParseTemplate(page);
  EXPECT_TRUE(Has(t, ProblemKind::kUnclosedElement));
  EXPECT_EQ(site.Render(page), "AOB");
  EXPECT_EQ(site.Render("<esi:try><esi:attempt>A"), "A");
}

TEST(EsiChoose, FirstTrueWhenWins) {
  Site site;
  std::string page =
      "<esi:choose><esi:when test=\"$(QUERY_STRING{n}) == 6\">six</esi:when>"
      "<esi:when test=\"$(QUERY_STRING{n}) == 7\">seven</esi:when>"
      "<esi:when test=\"$(QUERY_STRING{n}) > 1\">big</esi:when>"
      "<esi:otherwise>other</esi:otherwise></esi:choose>";
  EXPECT_EQ(site.Render(page), "seven");
  site.context.query = "n=1";
  EXPECT_EQ(site.Render(page), "other");
}

TEST(EsiChoose, IncludesOnlyInTheChosenBranch) {
  Site site;
  site.Add("/a", "A");
  site.Add("/b", "B");
  EXPECT_EQ(site.Render("<esi:choose><esi:when test=\"1 == 2\"><esi:include src=\"/a\"/></esi:when>"
                        "<esi:otherwise><esi:include src=\"/b\"/></esi:otherwise></esi:choose>"),
            "B");
  EXPECT_EQ(site.fetched, std::vector<std::string>{"example.com /b"});
}

TEST(EsiChoose, BadAndMissingTestsAreFalse) {
  Site site;
  std::string page =
      "<esi:choose><esi:when test=\"$(HTTP_HOST\">x</esi:when><esi:when>y</esi:when>"
      "<esi:otherwise>z</esi:otherwise></esi:choose>";
  EXPECT_EQ(site.Render(page), "z");
  Template t = ParseTemplate(page);
  EXPECT_TRUE(Has(t, ProblemKind::kBadTest));
  EXPECT_TRUE(Has(t, ProblemKind::kMissingTest));
}

TEST(EsiChoose, GreaterThanInsideQuotedTest) {
  Site site;
  EXPECT_EQ(site.Render("<esi:choose><esi:when test=\"$(QUERY_STRING{n}) > 5\">big</esi:when>"
                        "</esi:choose>|<esi:choose><esi:when test=\"3 &lt; 2\">no</esi:when>"
                        "<esi:otherwise>yes</esi:otherwise></esi:choose>"),
            "big|yes");
}

TEST(EsiVars, Substitutes) {
  Site site;
  EXPECT_EQ(site.Render("<p><esi:vars>$(HTTP_HOST) $(HTTP_COOKIE{user}) $(QUERY_STRING{n})"
                        "</esi:vars> $(HTTP_HOST)</p>"),
            "<p>example.com ann 7 $(HTTP_HOST)</p>");
  // In attributes of other markup too.
  EXPECT_EQ(site.Render("<esi:vars><a href=\"/u/$(HTTP_COOKIE{user})\">x</a></esi:vars>"),
            "<a href=\"/u/ann\">x</a>");
  // Not inside ESI tags or removed text.
  EXPECT_EQ(site.Render("<esi:vars>a<esi:remove>$(HTTP_HOST)</esi:remove>b</esi:vars>"), "ab");
}

TEST(EsiVars, ValuesAreEscapedAndNeverReparsed) {
  Site site;
  site.context.cookie = "x=<esi:include src=\"/a\"/>&";
  EXPECT_EQ(site.Render("<esi:vars>$(HTTP_COOKIE{x})</esi:vars>"),
            "&lt;esi:include src=&quot;/a&quot;/&gt;&amp;");
  site.options.escape_vars = false;
  EXPECT_EQ(site.Render("<esi:vars>$(HTTP_COOKIE{x})</esi:vars>"), "<esi:include src=\"/a\"/>&");
  EXPECT_TRUE(site.fetched.empty());
}

TEST(EsiVars, DefaultsAndMalformedReferences) {
  Site site;
  EXPECT_EQ(site.Render("<esi:vars>[$(HTTP_COOKIE{none}|'new user')][$(HTTP_COOKIE{none}|x)]"
                        "[$(HTTP_COOKIE{empty}|d)][$(HTTP_COOKIE{user}|d)][$(NOPE)][$(NOPE|z)]"
                        "</esi:vars>"),
            "[new user][x][d][ann][][z]");
  EXPECT_EQ(site.Render("<esi:vars>$( $(HTTP_HOST $$(HTTP_HOST) $(HTTP_COOKIE{a b}) $ ($x)"
                        "</esi:vars>"),
            "$( $(HTTP_HOST $example.com $(HTTP_COOKIE{a b}) $ ($x)");
}

TEST(EsiVars, NestingAndEmpty) {
  Site site;
  EXPECT_EQ(site.Render("<esi:vars><esi:vars>$(HTTP_HOST)</esi:vars>$(HTTP_HOST)</esi:vars>"
                        "$(HTTP_HOST)<esi:vars/>$(HTTP_HOST)"),
            "example.comexample.com$(HTTP_HOST)$(HTTP_HOST)");
  Template t = ParseTemplate("<p></esi:vars></p>");
  EXPECT_TRUE(Has(t, ProblemKind::kUnmatchedEndTag));
}

TEST(EsiVars, TooManyWaitingInOneConstruct) {
  // Inside one comment nothing is decided before its end, so references wait; past the limit
  // they stay literal.
  std::string refs;
  for (int i = 0; i < 300; ++i) refs += "$(HTTP_HOST)";
  std::string page = "<esi:vars><!--" + refs + "--></esi:vars>";
  EXPECT_TRUE(Has(ParseTemplate(page), ProblemKind::kTooManyVariables));
  Site site;
  std::string out = site.Render(page);
  size_t substituted = 0;
  for (size_t at = out.find("example.com"); at != std::string::npos;
       at = out.find("example.com", at + 1))
    ++substituted;
  EXPECT_EQ(substituted, Parser::kMaxPendingVariables);
}

TEST(EsiVars, VariablesInIncludeSrcAndAlt) {
  Site site;
  site.context.cookie = "user=a b&c";
  EXPECT_EQ(site.Render(
                "<esi:include src=\"/echo/url?u=$(HTTP_COOKIE{user})&amp;n=$(QUERY_STRING{n})\"/>"),
            "/echo/url?u=a%20b&c&n=7");
  site.Add("/alt/ann", "ALT");
  site.context.cookie = "user=ann";
  EXPECT_EQ(site.Render("<esi:include src=\"/missing\" alt=\"/alt/$(HTTP_COOKIE{user})\"/>"),
            "ALT");
}

TEST(EsiVariables, Values) {
  RequestContext c;
  c.host = "h.example";
  c.referer = "http://r/";
  c.cookie = "a=1; b = two ;c=\"q\"; a=dup";
  c.query = "x=1&y&z=&x=2&e=%20";
  c.accept_language = "en-GB, fr;q=0.5, de;q=0, *;q=0.1";
  c.user_agent = "Mozilla/4.0 (compatible; MSIE 5.5; Windows NT 5.0)";
  auto value = [&](const char* text) {
    VarRef ref;
    EXPECT_GT(ParseVarRef(text, &ref), 0u) << text;
    return VarValue(ref, c);
  };
  EXPECT_EQ(value("$(HTTP_HOST)"), "h.example");
  EXPECT_EQ(value("$(HTTP_REFERER)"), "http://r/");
  EXPECT_EQ(value("$(HTTP_HOST{x})"), "");
  EXPECT_EQ(value("$(HTTP_COOKIE)"), c.cookie);
  EXPECT_EQ(value("$(HTTP_COOKIE{a})"), "1");
  EXPECT_EQ(value("$(HTTP_COOKIE{b})"), "two");
  EXPECT_EQ(value("$(HTTP_COOKIE{c})"), "\"q\"");
  EXPECT_EQ(value("$(HTTP_COOKIE{d})"), "");
  EXPECT_EQ(value("$(QUERY_STRING)"), c.query);
  EXPECT_EQ(value("$(QUERY_STRING{x})"), "1");
  EXPECT_EQ(value("$(QUERY_STRING{y})"), "");
  EXPECT_EQ(value("$(QUERY_STRING{y}|d)"), "d");
  EXPECT_EQ(value("$(QUERY_STRING{e})"), "%20");
  EXPECT_EQ(value("$(HTTP_ACCEPT_LANGUAGE)"), c.accept_language);
  EXPECT_EQ(value("$(HTTP_ACCEPT_LANGUAGE{en})"), "true");
  EXPECT_EQ(value("$(HTTP_ACCEPT_LANGUAGE{en-gb})"), "true");
  EXPECT_EQ(value("$(HTTP_ACCEPT_LANGUAGE{en-us})"), "false");
  EXPECT_EQ(value("$(HTTP_ACCEPT_LANGUAGE{FR})"), "true");
  EXPECT_EQ(value("$(HTTP_ACCEPT_LANGUAGE{de})"), "false");
  EXPECT_EQ(value("$(HTTP_USER_AGENT)"), c.user_agent);
  EXPECT_EQ(value("$(HTTP_USER_AGENT{browser})"), "MSIE");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{version})"), "5.5");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{os})"), "WIN");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{other})"), "");
  c.user_agent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15";
  EXPECT_EQ(value("$(HTTP_USER_AGENT{browser})"), "MOZILLA");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{version})"), "5.0");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{os})"), "MAC");
  c.user_agent = "curl/8.1.2";
  EXPECT_EQ(value("$(HTTP_USER_AGENT{browser})"), "OTHER");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{version})"), "8.1.2");
  EXPECT_EQ(value("$(HTTP_USER_AGENT{os})"), "OTHER");
  c.user_agent = "Mozilla/5.0 (X11; Linux x86_64)";
  EXPECT_EQ(value("$(HTTP_USER_AGENT{os})"), "UNIX");
  EXPECT_EQ(value("$(SOMETHING_ELSE)"), "");
}

TEST(EsiVariables, ReferenceSyntax) {
  VarRef ref;
  EXPECT_EQ(ParseVarRef("$(HTTP_HOST)rest", &ref), 12u);
  EXPECT_EQ(ParseVarRef("$(HTTP_COOKIE{a}|'x y')", &ref), 23u);
  EXPECT_TRUE(ref.has_default);
  EXPECT_EQ(ref.fallback, "x y");
  EXPECT_EQ(ParseVarRef("$(HTTP_COOKIE{a}|)", &ref), 18u);
  EXPECT_TRUE(ref.has_default);
  EXPECT_EQ(ref.fallback, "");
  for (const char* bad : {"$()", "$(HTTP_HOST", "$(HTTP_COOKIE{})", "$(HTTP_COOKIE{a)",
                          "$(HTTP_COOKIE{a b})", "$(A|'x)", "$(A|x y)", "$ (A)", "$(A-B)", "(A)"})
    EXPECT_EQ(ParseVarRef(bad, &ref), 0u) << bad;
  std::string long_ref = "$(HTTP_COOKIE{" + std::string(kMaxVarRefLength, 'k') + "})";
  EXPECT_EQ(ParseVarRef(long_ref, &ref), 0u);
}

bool Truth(const char* text, const RequestContext& c = {}) {
  Expression e;
  size_t at = 0;
  EXPECT_TRUE(e.Compile(text, &at)) << text << " at " << at;
  return e.Evaluate(c);
}

TEST(EsiExpression, Comparisons) {
  EXPECT_TRUE(Truth("1 == 1"));
  EXPECT_TRUE(Truth("1 == 1.0"));      // numeric
  EXPECT_TRUE(Truth("'1' == '1.0'"));  // numeric strings compare as numbers
  EXPECT_TRUE(Truth("'a' != 'b'"));
  EXPECT_TRUE(Truth("2 < 10"));                         // numeric: 2 < 10
  EXPECT_TRUE(Truth("'2' < '10'") == Truth("2 < 10"));  // numeric strings compare as numbers
  EXPECT_TRUE(Truth("'b' > 'a'"));
  EXPECT_TRUE(Truth("'abc' < 'abd'"));
  EXPECT_TRUE(Truth("'10' > '9'"));
  EXPECT_TRUE(Truth("'x10' < 'x9'"));  // not numeric: bytewise
  EXPECT_TRUE(Truth("3 >= 3"));
  EXPECT_TRUE(Truth("3 <= 3"));
  EXPECT_FALSE(Truth("3 > 3"));
  EXPECT_FALSE(Truth("3 < 3"));
  EXPECT_TRUE(Truth("-1 < 0"));
  EXPECT_TRUE(Truth("'''it's''' == '''it's'''"));
}

TEST(EsiExpression, Logic) {
  EXPECT_TRUE(Truth("1 == 1 & 2 == 2"));
  EXPECT_FALSE(Truth("1 == 1 & 2 == 3"));
  EXPECT_TRUE(Truth("1 == 2 | 2 == 2"));
  EXPECT_FALSE(Truth("1 == 2 | 2 == 3"));
  EXPECT_TRUE(Truth("!(1 == 2)"));
  EXPECT_TRUE(Truth("!1 == 2"));                   // ! binds looser than ==
  EXPECT_TRUE(Truth("1 == 2 & 3 == 3 | 4 == 4"));  // & before |
  EXPECT_FALSE(Truth("1 == 2 & (3 == 3 | 4 == 4)"));
  EXPECT_TRUE(Truth("!!(1 == 1)"));
  EXPECT_TRUE(Truth("'x'"));
  EXPECT_FALSE(Truth("''"));
  EXPECT_FALSE(Truth("0"));
  EXPECT_TRUE(Truth("((((1))))"));
}

TEST(EsiExpression, Variables) {
  RequestContext c;
  c.cookie = "group=Advanced; n=12";
  c.accept_language = "en";
  EXPECT_TRUE(Truth("$(HTTP_COOKIE{group}) == 'Advanced'", c));
  EXPECT_TRUE(Truth("$(HTTP_COOKIE{n}) > 9", c));        // numeric
  EXPECT_TRUE(Truth("$(HTTP_COOKIE{n}) > '9'", c));      // numeric string
  EXPECT_TRUE(Truth("$(HTTP_ACCEPT_LANGUAGE{en})", c));  // a boolean alone
  EXPECT_FALSE(Truth("$(HTTP_ACCEPT_LANGUAGE{fr})", c));
  EXPECT_TRUE(Truth("$(HTTP_ACCEPT_LANGUAGE{en}) == 'true'", c));
  EXPECT_TRUE(Truth("!$(HTTP_COOKIE{missing})", c));
  EXPECT_TRUE(Truth("$(HTTP_COOKIE{missing}|'d') == 'd'", c));
}

TEST(EsiExpression, SyntaxErrors) {
  for (const char* bad :
       {"", "1 ==", "== 1", "(1 == 1", "1 == 1)", "'open", "abc", "1 = 1", "1 === 1", "$(HTTP_HOST",
        "1 == 1 &", "| 1", "1.", "1..2", "- 1", "'a' 'b'", "1 && 1", "!"}) {
    Expression e;
    size_t at = 0;
    EXPECT_FALSE(e.Compile(bad, &at)) << bad;
    EXPECT_FALSE(e.Evaluate({})) << bad;
  }
  std::string deep(Expression::kMaxNesting + 1, '(');
  deep += "1";
  deep += std::string(Expression::kMaxNesting + 1, ')');
  Expression e;
  size_t at = 0;
  EXPECT_FALSE(e.Compile(deep, &at));
  std::string nots(Expression::kMaxNesting + 1, '!');
  EXPECT_FALSE(e.Compile(nots + "1", &at));
  // A long flat chain is fine (evaluated without deep recursion).
  std::string chain = "1 == 2";
  for (int i = 0; i < 2000; ++i) chain += " | 1 == 2";
  EXPECT_TRUE(e.Compile(chain + " | 3 == 3", &at));
  EXPECT_TRUE(e.Evaluate({}));
}

// ---------------------------------------------------------------------------------------------
// Failure, limits and scheduling

TEST(EsiFailure, NoAltNoContinueFailsThePage) {
  Site site;
  bool ok = true;
  site.Render("<p>a<esi:include src=\"/missing\"/>b</p>", "/", &ok);
  EXPECT_FALSE(ok);
}

TEST(EsiFailure, AltThenContinue) {
  Site site;
  site.Add("/alt", "ALT");
  EXPECT_EQ(site.Render("<p><esi:include src=\"/missing\" alt=\"/alt\"/></p>"), "<p>ALT</p>");
  EXPECT_EQ(site.fetched, (std::vector<std::string>{"example.com /missing", "example.com /alt"}));
  EXPECT_EQ(
      site.Render("<p>a<esi:include src=\"/missing\" alt=\"/gone\" onerror=\"continue\"/>b</p>"),
      "<p>ab</p>");
  bool ok = true;
  site.Render("<p><esi:include src=\"/missing\" alt=\"/gone\"/></p>", "/", &ok);
  EXPECT_FALSE(ok);
}

TEST(EsiFailure, FailureInsideAFragmentFailsThePage) {
  Site site;
  site.Add("/frag", "<i><esi:include src=\"/missing\"/></i>");
  bool ok = true;
  site.Render("<p><esi:include src=\"/frag\" onerror=\"continue\"/></p>", "/", &ok);
  EXPECT_FALSE(ok);
}

TEST(EsiLimits, DepthCutsALoop) {
  Site site;
  site.Add("/loop", "<x><esi:include src=\"/loop\"/></x>");
  // Depth 0 (the page) to 5, as Varnish's max_esi_depth = 5.
  EXPECT_EQ(site.Render("<x><esi:include src=\"/loop\"/></x>"),
            "<x><x><x><x><x><x></x></x></x></x></x></x>");
  ASSERT_EQ(site.issues.size(), 1u);
  EXPECT_EQ(site.issues[0].kind, EvalIssueKind::kDepthLimit);
  site.limits.max_depth = 1;
  EXPECT_EQ(site.Render("<x><esi:include src=\"/loop\"/></x>"), "<x><x></x></x>");
}

TEST(EsiLimits, MaxIncludes) {
  Site site;
  site.Add("/a", "A");
  site.limits.max_includes = 3;
  std::string page;
  for (int i = 0; i < 5; ++i) page += "<esi:include src=\"/a\" onerror=\"continue\"/>";
  EXPECT_EQ(site.Render(page), "AAA");
  EXPECT_EQ(site.fetched.size(), 3u);
  size_t over = std::count_if(site.issues.begin(), site.issues.end(), [](const EvalIssue& i) {
    return i.kind == EvalIssueKind::kTooManyIncludes;
  });
  EXPECT_EQ(over, 2u);
}

Plan PlanOf(const std::string& body, uintptr_t tag = 0) {
  Template t = ParseTemplate(body);
  return Evaluate(t, {}, Location{"h", "/", false}, {}, tag);
}

TEST(EsiAssembly, AllIncludesAreRequestedAtOnceAndOutputStreams) {
  static const std::string page =
      "<p>0<esi:include src=\"/1\"/>1<esi:include src=\"/2\"/>2<esi:include src=\"/3\"/>3</p>";
  Assembly a(PlanOf(page));
  std::vector<Fetch> fetches;
  a.TakeFetches(&fetches);
  ASSERT_EQ(fetches.size(), 3u);
  EXPECT_EQ(fetches[0].location.target, "/1");
  EXPECT_EQ(fetches[2].location.target, "/3");
  EXPECT_EQ(fetches[0].depth, 1);
  Piece piece;
  ASSERT_EQ(a.Next(&piece), Assembly::State::kReady);
  EXPECT_EQ(page.substr(piece.offset, piece.length), "<p>0");
  EXPECT_EQ(a.Next(&piece), Assembly::State::kWaiting);
  // The last include completes first: nothing more comes out yet.
  a.Succeed(fetches[2].id, Plan::Verbatim(1, 3));
  EXPECT_EQ(a.Next(&piece), Assembly::State::kWaiting);
  a.Succeed(fetches[0].id, Plan::Verbatim(1, 1));
  ASSERT_EQ(a.Next(&piece), Assembly::State::kReady);
  EXPECT_EQ(piece.body, 1u);
  ASSERT_EQ(a.Next(&piece), Assembly::State::kReady);
  EXPECT_EQ(page.substr(piece.offset, piece.length), "1");
  EXPECT_EQ(a.Next(&piece), Assembly::State::kWaiting);
  a.Succeed(fetches[1].id, Plan::Verbatim(1, 2));
  std::vector<uintptr_t> bodies;
  Assembly::State state;
  while ((state = a.Next(&piece)) == Assembly::State::kReady) bodies.push_back(piece.body);
  EXPECT_EQ(state, Assembly::State::kDone);
  EXPECT_EQ(bodies, (std::vector<uintptr_t>{2, 0, 3, 0}));
  // Unknown or repeated completions are ignored.
  a.Succeed(fetches[1].id, Plan::Verbatim(1, 9));
  a.Fail(12345);
  EXPECT_EQ(a.Next(&piece), Assembly::State::kDone);
}

TEST(EsiAssembly, ParallelLimit) {
  std::string page;
  for (int i = 0; i < 10; ++i) page += "<esi:include src=\"/x\"/>";
  Limits limits;
  limits.max_parallel = 4;
  Assembly a(PlanOf(page), limits);
  std::vector<Fetch> fetches;
  a.TakeFetches(&fetches);
  EXPECT_EQ(fetches.size(), 4u);
  EXPECT_EQ(a.in_flight(), 4);
  a.TakeFetches(&fetches);
  EXPECT_EQ(fetches.size(), 4u);
  a.Succeed(fetches[0].id, Plan::Verbatim(0, 1));
  a.TakeFetches(&fetches);
  EXPECT_EQ(fetches.size(), 5u);
}

TEST(EsiAssembly, AttemptIsHeldUntilSettledAndExceptFetchedOnlyAfterFailure) {
  std::string page =
      "<a><esi:try><esi:attempt>b<esi:include src=\"/1\"/><esi:include src=\"/2\"/></esi:attempt>"
      "<esi:except>c<esi:include src=\"/3\"/></esi:except></esi:try>d";
  Assembly a(PlanOf(page));
  std::vector<Fetch> fetches;
  a.TakeFetches(&fetches);
  ASSERT_EQ(fetches.size(), 2u);
  Piece piece;
  ASSERT_EQ(a.Next(&piece), Assembly::State::kReady);  // "<a>"
  a.Succeed(fetches[0].id, Plan::Verbatim(1, 1));
  EXPECT_EQ(a.Next(&piece), Assembly::State::kWaiting);  // attempt not settled: held
  a.Fail(fetches[1].id);
  fetches.clear();
  a.TakeFetches(&fetches);
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_EQ(fetches[0].location.target, "/3");
  EXPECT_EQ(a.Next(&piece), Assembly::State::kWaiting);
  a.Succeed(fetches[0].id, Plan::Verbatim(1, 3));
  std::string out;
  Assembly::State state;
  while ((state = a.Next(&piece)) == Assembly::State::kReady)
    out += piece.body == 0 ? page.substr(piece.offset, piece.length)
                           : "<" + std::to_string(piece.body) + ">";
  EXPECT_EQ(state, Assembly::State::kDone);
  EXPECT_EQ(out, "c<3>d");
  EXPECT_FALSE(a.failed());
}

TEST(EsiAssembly, FailureKnownBeforeTheFirstByte) {
  Assembly a(PlanOf("<p><esi:include src=\"/1\"/></p>"));
  std::vector<Fetch> fetches;
  a.TakeFetches(&fetches);
  a.Fail(fetches[0].id);
  EXPECT_TRUE(a.failed());
  Piece piece;
  EXPECT_EQ(a.Next(&piece), Assembly::State::kFailed);
}

TEST(EsiAssembly, LateCompletionsOfAFailedAttemptAreIgnored) {
  Assembly a(
      PlanOf("<esi:try><esi:attempt><esi:include src=\"/1\"/><esi:include src=\"/2\"/>"
             "</esi:attempt><esi:except>E</esi:except></esi:try>"));
  std::vector<Fetch> fetches;
  a.TakeFetches(&fetches);
  a.Fail(fetches[0].id);
  a.Succeed(fetches[1].id, PlanOf("<x><esi:include src=\"/late\"/></x>", 7));
  std::vector<Fetch> more;
  a.TakeFetches(&more);
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(a.in_flight(), 0);
  Piece piece;
  ASSERT_EQ(a.Next(&piece), Assembly::State::kReady);
  EXPECT_EQ(piece.length, 1u);  // "E"
  EXPECT_EQ(a.Next(&piece), Assembly::State::kDone);
}

// ---------------------------------------------------------------------------------------------
// Dialect

TEST(EsiDialect, VarnishKnowsOnlyItsStatements) {
  Site site;
  site.parser.dialect = Dialect::kVarnish;
  site.Add("/a", "A");
  EXPECT_EQ(site.Render("<esi:try><esi:attempt>x</esi:attempt></esi:try>"
                        "<esi:vars>$(HTTP_HOST)</esi:vars>"),
            "x$(HTTP_HOST)");
  EXPECT_EQ(site.Render("<esi:include src=\"/echo/url?$(HTTP_HOST)\" alt=\"/a\"/>"),
            "/echo/url?$(HTTP_HOST)");
}

// ---------------------------------------------------------------------------------------------
// Template

TEST(EsiTemplate, LiteralsAreSpansAndCoalesce) {
  std::string body = "<p>a<esi:remove>x</esi:remove>b<!--esi c-->d</p>";
  Template t = ParseTemplate(body);
  std::string out;
  for (const Instruction& in : t.instructions()) {
    ASSERT_EQ(in.op, Op::kLiteral);
    ASSERT_LE(in.offset + in.length, body.size());
    out += body.substr(in.offset, in.length);
  }
  EXPECT_EQ(out, "<p>ab cd</p>");
  EXPECT_EQ(t.instructions().size(), 4u);
  EXPECT_GT(t.memory_bytes(), sizeof(Template));
}

TEST(EsiTemplate, ProblemsAreCapped) {
  std::string body = "<p>";
  for (int i = 0; i < 100; ++i) body += "<esi:bogus/>";
  Template t = ParseTemplate(body);
  EXPECT_EQ(t.error_count(), 100u);
  EXPECT_EQ(t.problems().size(), Template::kMaxProblemsKept);
  EXPECT_EQ(t.problems()[1].offset, 3u + 12u + 5u);  // noticed after "<esi:"
  EXPECT_NE(std::string(ProblemName(t.problems()[0].kind)).find("bogus"), std::string::npos);
}

TEST(EsiTemplate, DumpShowsStructure) {
  Template t = ParseTemplate(
      "<esi:try><esi:attempt><esi:vars>$(HTTP_HOST)</esi:vars></esi:attempt></esi:try>"
      "<esi:choose><esi:when test=\"1==1\">x</esi:when></esi:choose>");
  EXPECT_EQ(t.Dump(),
            "try\n  attempt\n    variable $(HTTP_HOST)\nchoose\n  when\n    literal 113+1\n");
}

TEST(EsiTemplate, AttributeTooLong) {
  std::string body =
      "<p><esi:include src=\"/" + std::string(Parser::kMaxAttributeLength, 'a') + "\"/>x</p>";
  Template t = ParseTemplate(body);
  EXPECT_TRUE(Has(t, ProblemKind::kAttributeTooLong));
  EXPECT_EQ(t.include_count(), 0u);
}

TEST(EsiTemplate, BlocksTooDeep) {
  std::string body;
  for (size_t i = 0; i < Parser::kMaxBlockDepth + 3; ++i) body += "<esi:vars>";
  body += "$(HTTP_HOST)";
  Template t = ParseTemplate(body);
  EXPECT_TRUE(Has(t, ProblemKind::kTooDeep));
  Site site;
  EXPECT_EQ(site.Render(body), "example.com");
}

// ---------------------------------------------------------------------------------------------
// Chunking property: any split gives the same template and output

std::vector<std::string> SampleBodies() {
  std::vector<std::string> bodies = {
      // NOLINT(bugprone-suspicious-missing-comma)
      "<p>a<esi:include src=\"/a\" alt='/b' onerror=\"continue\"/>b</p>",
      "<p>a<!--esi b<esi:include src=\"/a\"/>c-->d<!--esi e --->f--><!-- g -->h</p>",
      "<p><esi:remove>x<esi:remove/></esi:remove>y<![CDATA[<esi:include src=\"/z\"/>]]>z</p>",
      "<esi:vars>$(HTTP_COOKIE{user}|'x') <a href=\"$(QUERY_STRING{n})\">$(HTTP_HOST)</a>"
      "<!-- $(HTTP_HOST) --></esi:vars>$(HTTP_HOST)",
      "<esi:try><esi:attempt>a<esi:include src=\"/a\"/></esi:attempt><esi:except>e</esi:except>"
      "</esi:try><esi:choose><esi:when test=\"$(QUERY_STRING{n}) > 5 &amp; 1 == 1\">w</esi:when>"
      "<esi:otherwise>o</esi:otherwise></esi:choose>",
      "<p>a<esi:include src=\"/a\" !>b<esi:include/>c<esi:includesrc=\"/q\"/><esi:foo>",
      "  <p><!---->x<!--->y-->z<esi:comment text=\"c\">q</esi:comment><esi:",
      "<p>a<!--esi x-<b>->y</p>",
      "<p>a<esi:include src=\"/a\"/>b<!-",
  };
  // The corpus pages.
  std::filesystem::path corpus = std::filesystem::path(__FILE__).parent_path() / "esi_corpus";
  if (const char* env = std::getenv("ESI_CORPUS")) corpus = env;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(corpus, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file() || it->path().filename() == "CASES") continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().size() < 4096) bodies.push_back(ss.str());
  }
  // Random token soup.
  static const char* const kTokens[] = {"<esi:include src=\"/a\"/>",
                                        "<esi:include",
                                        " src=\"",
                                        "\"",
                                        "'",
                                        "/>",
                                        ">",
                                        "<",
                                        "/",
                                        "=",
                                        " ",
                                        "\n",
                                        "<esi:remove>",
                                        "</esi:remove>",
                                        "<!--esi",
                                        "-->",
                                        "-",
                                        "<!--",
                                        "<![CDATA[",
                                        "]]>",
                                        "<esi:bogus>",
                                        "</esi:",
                                        "<esi:",
                                        "<p>",
                                        "text",
                                        "$(",
                                        "HTTP_HOST",
                                        ")",
                                        "{",
                                        "}",
                                        "|",
                                        "<esi:vars>",
                                        "</esi:vars>",
                                        "<esi:try>",
                                        "<esi:attempt>",
                                        "</esi:attempt>",
                                        "<esi:except>",
                                        "</esi:try>",
                                        "<esi:choose>",
                                        "<esi:when test=\"1==1\">",
                                        "</esi:when>",
                                        "<esi:otherwise>",
                                        "</esi:choose>",
                                        "$(HTTP_COOKIE{user}|'d')",
                                        "\r",
                                        "\t"};
  std::mt19937 rng(42);
  for (int i = 0; i < 300; ++i) {
    std::string body = "<";
    int n = 1 + static_cast<int>(rng() % 40);
    for (int j = 0; j < n; ++j) body += kTokens[rng() % std::size(kTokens)];
    bodies.push_back(body);
  }
  return bodies;
}

std::string Output(const std::string& body, const Template& t) {
  // Includes are not fetched here: every include gives "[src]".
  class Echo : public Resolver {
   public:
    bool Resolve(const Fetch& fetch, Plan* fragment) override {
      texts.push_back("[" + fetch.location.target + "]");
      *fragment = Plan::Verbatim(texts.back().size(), texts.size());
      return true;
    }
    std::deque<std::string> texts;
  } echo;
  Site site;  // for its request context
  Plan plan = Evaluate(t, site.context, Location{"h", "/d/p", false}, {}, 0);
  Assembly a(std::move(plan));
  std::string out;
  RunToEnd(a, echo, [&](const Piece& p) {
    if (p.kind == Piece::kText)
      out += p.text;
    else if (p.body == 0)
      out += body.substr(p.offset, p.length);
    else
      out += echo.texts[p.body - 1].substr(p.offset, p.length);
  });
  return out;
}

TEST(EsiChunking, AnySplitGivesTheSameTemplateAndOutput) {
  std::mt19937 rng(7);
  int checked = 0;
  for (const std::string& body : SampleBodies()) {
    for (Dialect dialect : {Dialect::kEsi10, Dialect::kVarnish}) {
      ParserOptions options;
      options.dialect = dialect;
      Template whole = ParseTemplate(body, options);
      std::string expected = Fingerprint(whole);
      std::string expected_out = Output(body, whole);
      // Two chunks: every cut of short bodies, 40 cuts of longer ones. Then one-byte chunks and
      // random chunkings, whose output is compared too (the output is a function of the
      // template, so the fingerprint covers the rest).
      size_t step = body.size() <= 160 ? 1 : body.size() / 40;
      for (size_t cut = 0; cut <= body.size(); cut += step) {
        Template t = ParseChunks(body, {cut}, options);
        ASSERT_EQ(Fingerprint(t), expected) << "body: " << body << " cut " << cut;
        ++checked;
      }
      std::vector<std::vector<size_t>> splits;
      std::vector<size_t> bytes;
      for (size_t cut = 1; cut < body.size(); ++cut) bytes.push_back(cut);
      splits.push_back(bytes);
      for (int r = 0; r < 3; ++r) {
        std::vector<size_t> cuts;
        for (size_t cut = 0; cut < body.size(); cut += 1 + rng() % 7) cuts.push_back(cut);
        splits.push_back(cuts);
      }
      for (const auto& cuts : splits) {
        Template t = ParseChunks(body, cuts, options);
        ASSERT_EQ(Fingerprint(t), expected) << "body: " << body;
        ASSERT_EQ(Output(body, t), expected_out) << body;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20000);
}

// Inputs at the limits (the 10-minute libFuzzer run of esi/fuzz_parser.cc, 1.45 million inputs,
// found no crash; any input it finds that crashes goes here).
TEST(EsiFuzzRegressions, Inputs) {
  const std::string inputs[] = {
      "<esi:vars>$(A|'"s + std::string(600, 'x'),
      "<esi:choose><esi:when test=\"" + std::string(40, '(') + "\">",
      "<esi:try><esi:attempt><esi:try><esi:attempt></esi:try></esi:try></esi:try>",
      "<\0esi:include src=\"\0\"/>"s,
  };
  // What each must still do: parse whole and byte by byte to the same template and output, cover
  // every byte of the body, and report the three malformed ones as errors (the NUL before "esi"
  // makes the last one not a tag at all: verbatim text).
  const bool malformed[] = {true, true, true, false};
  for (size_t i = 0; i < std::size(inputs); ++i) {
    const std::string& body = inputs[i];
    SCOPED_TRACE("input " + std::to_string(i) + ": " + body.substr(0, 80));
    Template t = ParseTemplate(body);
    EXPECT_EQ(t.body_length(), body.size());
    EXPECT_EQ(t.error_count() > 0, malformed[i]) << Fingerprint(t);
    std::vector<size_t> bytes;
    for (size_t cut = 1; cut < body.size(); ++cut) bytes.push_back(cut);
    Template split = ParseChunks(body, bytes);
    EXPECT_EQ(Fingerprint(split), Fingerprint(t));
    const std::string out = Output(body, t);
    EXPECT_EQ(Output(body, split), out);
    if (!malformed[i]) {
      EXPECT_EQ(out, body) << "verbatim text is delivered as it is";
    }
  }
}

}  // namespace
}  // namespace shellac::esi
