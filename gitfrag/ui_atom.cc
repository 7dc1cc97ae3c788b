// The Atom feed (/REPO/atom/?h=, /REPO/atom/PATH?h=): the newest max-atom-items commits of h= (or
// the default branch), with a path those git's `log -- PATH` shows, as cgit 1.2.3 writes it. It
// depends on a branch, so it is rendered per request; an entry's text (all of it but the link to
// the commit's page) depends on the commit alone and is kept by id.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/raw_objects.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

// "2021-03-04T13:07:08+00:00": cgit writes feed dates in UTC. Written by hand (strftime's
// locale machinery was a tenth of an entry's cost).
std::string AtomDate(git_time_t when) {
  const time_t t = static_cast<time_t>(when);
  struct tm tm;
  gmtime_r(&t, &tm);
  char date[48];
  const int year = tm.tm_year + 1900;
  if (year < 1000 || year > 9999) {  // other widths: as strftime writes them
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
    return date;
  }
  const auto two = [](char* at, int value) {
    at[0] = static_cast<char>('0' + value / 10);
    at[1] = static_cast<char>('0' + value % 10);
  };
  std::memcpy(date, "0000-00-00T00:00:00+00:00", 25);
  two(date, year / 100);
  two(date + 2, year % 100);
  two(date + 5, tm.tm_mon + 1);
  two(date + 8, tm.tm_mday);
  two(date + 11, tm.tm_hour);
  two(date + 14, tm.tm_min);
  two(date + 17, tm.tm_sec);
  return std::string(date, 25);
}

// Whether one of the 8 bytes of `word` is '&', '<' or '>' (a byte equal to c leaves a zero byte in
// word ^ c*ones, which (v - ones) & ~v & highs finds).
constexpr bool HasXmlSpecial(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101, kHighs = 0x8080808080808080;
  const auto zero_byte = [](uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  return (zero_byte(word ^ (kOnes * '&')) | zero_byte(word ^ (kOnes * '<')) |
          zero_byte(word ^ (kOnes * '>'))) != 0;
}

// Text as cgit's html_txt escapes it: only '&', '<' and '>' (quotes stay as they are). Runs of
// other bytes are found 8 bytes at a time, then through a table, and copied whole.
void XmlText(std::string& out, std::string_view text) {
  static constexpr auto kSpecial = [] {
    std::array<bool, 256> special{};
    special['&'] = special['<'] = special['>'] = true;
    return special;
  }();
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p != end) {
    const char* const run = p;
    for (uint64_t word; end - p >= 8; p += 8) {
      std::memcpy(&word, p, 8);
      if (HasXmlSpecial(word)) break;
    }
    while (p != end && !kSpecial[static_cast<unsigned char>(*p)]) ++p;
    out.append(run, static_cast<size_t>(p - run));
    if (p == end) break;
    out.append(*p == '&' ? "&amp;" : *p == '<' ? "&lt;" : "&gt;");
    ++p;
  }
}

void XmlText(Writer& out, std::string_view text) {
  std::string escaped;
  XmlText(escaped, text);
  out.Raw(escaped);
}

// An entry's text but for its link, which names the repository: `head` up to the author's date,
// `tail` from the id's end. One commit makes the same entry in every repository (every fork) and
// every feed (every branch) it shows in.
struct AtomEntry {
  std::string updated;  // the committer date, the feed's <updated> when the entry is the first
  std::string head;     // "<entry>\n<title>...</title>...<published>DATE"
  std::string tail;     // "</id>\n<content type='text'>\nBODY</content>\n</entry>\n"
};

struct AtomEntryWeight {
  size_t operator()(const std::shared_ptr<const AtomEntry>& e) const {
    return sizeof(AtomEntry) + e->updated.size() + e->head.size() + e->tail.size();
  }
};

// A path-limited feed's walk stops after this long (as the path log's).
constexpr std::chrono::seconds kWalkLimit{5};

// The memo holds at most two generations of this many bytes of entries.
constexpr size_t kAtomGenerationBytes = size_t{4} << 20;

std::shared_ptr<const AtomEntry> MakeAtomEntry(const CommitFields& commit) {
  auto entry = std::make_shared<AtomEntry>();
  entry->updated = AtomDate(commit.committer_time);
  const char* encoding = commit.encoding ? commit.encoding->c_str() : nullptr;
  const std::string text = ToUtf8(commit.message, encoding);
  std::string_view subject, body;
  SplitMessage(text, &subject, &body);
  std::string& head = entry->head;
  head.reserve(subject.size() + commit.author_name.size() + commit.author_email.size() + 160);
  entry->tail.reserve(body.size() + 48);
  head.append("<entry>\n<title>");
  XmlText(head, subject);
  head.append("</title>\n<updated>").append(entry->updated).append("</updated>\n<author>\n<name>");
  XmlText(head, ToUtf8(commit.author_name, encoding));
  head.append("</name>\n<email>");
  XmlText(head, commit.author_email);
  head.append("</email>\n</author>\n<published>").append(AtomDate(commit.author_time));
  entry->tail.append("</id>\n<content type='text'>\n");
  XmlText(entry->tail, body);
  entry->tail.append("</content>\n</entry>\n");
  return entry;
}

// Commit `id`'s entry, from the memo or read; null when the commit cannot be read. The commit's
// bytes come raw from the pack reader (no libgit2 object, parse or hash check); one of another
// shape than git writes is read by libgit2, as before.
std::shared_ptr<const AtomEntry> AtomEntryOf(RawObjects& objects, const git_oid& id) {
  static SharedMemo<git_oid, std::shared_ptr<const AtomEntry>, OidHash, OidEqual, AtomEntryWeight>
      memo(kAtomGenerationBytes);
  if (std::optional<std::shared_ptr<const AtomEntry>> known = memo.Find(id)) return *known;
  std::shared_ptr<const AtomEntry> entry;
  CommitFields parsed;
  if (const BackendObject raw = objects.Read(id, GIT_OBJECT_COMMIT);
      raw && ParsePlainCommit(raw.bytes(), &parsed)) {
    entry = MakeAtomEntry(parsed);
  } else {
    git_commit* commit = nullptr;
    {
      const PackedReadsScope packed_reads;  // inflated by the pack reader (libdeflate)
      if (git_commit_lookup(&commit, objects.repo(), &id) != 0) return nullptr;
    }
    const CommitPtr owned(commit);
    entry = MakeAtomEntry(FieldsOf(commit));
  }
  memo.Add(id, entry);
  return entry;
}

}  // namespace

Page RenderAtom(const PageContext& ctx) {
  const Route& r = ctx.route;
  const std::string& tip = r.head.empty() ? ctx.lease.refs().head_branch() : r.head;
  int status = 200;
  std::string reason;
  // The walk's start: a branch's tip from the ref index (no ref files, no commit read).
  const std::optional<git_oid> start = WalkStart(ctx, tip, &status, &reason);
  if (!start) return ErrorPage(status, reason);
  Page page;
  page.content_type = "text/xml; charset=utf-8";
  Writer& out = ctx.out;
  out.Raw("<feed xmlns='http://www.w3.org/2005/Atom'>\n<title>");
  XmlText(out, ctx.repo.name);
  if (!r.path.empty()) XmlText(out.Raw("/"), r.path);
  if (!tip.empty()) XmlText(out.Raw(", branch "), tip);
  out.Raw("</title>\n<subtitle>");
  XmlText(out, ctx.repo.desc);
  out.Raw("</subtitle>\n");
  // With a host, the feed's own address and links that take a reader to the pages.
  std::string repo_url;
  if (!r.origin.empty()) {
    repo_url = r.origin + ctx.chrome.virtual_root + ctx.repo.url + "/";
    std::string self = repo_url + "atom";
    if (!r.query.empty()) self += "?" + r.query;
    XmlText(out.Raw("<id>"), self);
    out.Raw("</id>\n<link rel='self' href='").Text(self).Raw("'/>\n");
    out.Raw("<link rel='alternate' type='text/html' href='").Text(repo_url).Raw("'/>\n");
  }
  // The walk knows the commits' order from their links (the commit-graph or the links memo), and
  // with a path (/REPO/atom/PATH: git log -- PATH) which commits changed it from the Bloom filters
  // and the path's entries: a commit whose entry is known is not read.
  DateWalk walk(ctx.lease.repo(), {*start}, nullptr, r.path);
  walk.set_deadline(DateWalk::Clock::now() + kWalkLimit);
  RawObjects objects(ctx.lease.repo());
  bool first = true;
  git_oid id;
  for (unsigned n = 0; n < ctx.site.max_atom_items() && walk.NextId(&id); ++n) {
    const std::shared_ptr<const AtomEntry> entry = AtomEntryOf(objects, id);
    if (!entry) break;
    if (first) out.Raw("<updated>").Raw(entry->updated).Raw("</updated>\n");
    first = false;
    out.Raw(entry->head);
    const std::string hex = OidHex(id);
    if (!repo_url.empty()) {
      out.Raw("</published>\n<link rel='alternate' type='text/html' href='")
          .Text(repo_url)
          .Raw("commit/?id=")
          .Raw(hex)
          .Raw("'/>\n<id>urn:sha1:");
    } else {
      out.Raw("</published>\n<id>urn:sha1:");
    }
    out.Raw(hex).Raw(entry->tail);
  }
  out.Raw("</feed>\n");
  // Not cgit's: its walk has no bound. A path walk cut by time ends the feed early, and a later
  // render may walk further.
  page.no_store = walk.stopped();
  return page;
}

}  // namespace shellac::gitfrag
