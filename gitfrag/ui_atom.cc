// The Atom feed (/REPO/atom/?h=, /REPO/atom/PATH?h=): the newest max-atom-items commits of h= (or
// the default branch), with a path those git's `log -- PATH` shows, as cgit 1.2.3 writes it. It
// depends on a branch, so it is rendered per request; an entry's text (all of it but the link to
// the commit's page) depends on the commit alone and is kept by id.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gitfrag/byte_scan.h"
#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/raw_objects.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

using namespace std::string_view_literals;

// 1970..9999 worked out by hand (~220 instructions a date; gmtime_r, its time-zone lock and the
// digits took ~1,400); other years as strftime writes them.
size_t AtomDate(int64_t when, char* out) {
  constexpr int64_t kYear10000 = 253402300800;  // 10000-01-01T00:00:00Z
  if (when < 0 || when >= kYear10000) {
    const time_t t = static_cast<time_t>(when);
    struct tm tm;
    if (gmtime_r(&t, &tm) == nullptr) return 0;
    return std::strftime(out, kAtomDateMax, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  }
  // Days to a proleptic Gregorian date: counted from 0000-03-01 (a year that starts in March ends
  // on its leap day) in 400-year eras of 146,097 days.
  const int64_t days = when / 86400, second = when % 86400;
  const int64_t shifted = days + 719468;  // days since 0000-03-01
  const int64_t era = shifted / 146097, day_of_era = shifted % 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t march_month = (5 * day_of_year + 2) / 153;  // 0 = March
  const int day = static_cast<int>(day_of_year - (153 * march_month + 2) / 5 + 1);
  const int month = static_cast<int>(march_month < 10 ? march_month + 3 : march_month - 9);
  const int year = static_cast<int>(year_of_era + era * 400 + (month <= 2 ? 1 : 0));
  const auto two = [](char* at, int value) {
    at[0] = static_cast<char>('0' + value / 10);
    at[1] = static_cast<char>('0' + value % 10);
  };
  std::memcpy(out, "0000-00-00T00:00:00+00:00", kAtomDateLength);
  two(out, year / 100);
  two(out + 2, year % 100);
  two(out + 5, month);
  two(out + 8, day);
  two(out + 11, static_cast<int>(second / 3600));
  two(out + 14, static_cast<int>(second / 60 % 60));
  two(out + 17, static_cast<int>(second % 60));
  return kAtomDateLength;
}

namespace {

// Text as cgit's html_txt escapes it: only '&', '<' and '>' (quotes stay as they are); the runs
// between them copied whole.
void XmlText(std::string& out, std::string_view text) {
  EscapeRuns(
      text, FindAnyOf<'&', '<', '>'>, [&out](std::string_view run) { out.append(run); },
      [&out](char c) { out.append(c == '&' ? "&amp;"sv : c == '<' ? "&lt;"sv : "&gt;"sv); });
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

// `text` in UTF-8 as ToUtf8 makes it, copied only when there is an encoding to convert from.
std::string_view Utf8View(std::string_view text, const char* encoding, std::string* converted) {
  if (encoding == nullptr) return text;
  *converted = ToUtf8(text, encoding);
  return *converted;
}

std::shared_ptr<const AtomEntry> MakeAtomEntry(const CommitFields& commit, bool plain_email) {
  auto entry = std::make_shared<AtomEntry>();
  char date[kAtomDateMax];
  entry->updated.assign(date, AtomDate(commit.committer_time, date));
  const char* encoding = commit.encoding ? commit.encoding->c_str() : nullptr;
  std::string message_utf8, name_utf8;
  std::string_view subject, body;
  SplitMessage(Utf8View(commit.message, encoding, &message_utf8), &subject, &body);
  const std::string_view name = Utf8View(commit.author_name, encoding, &name_utf8);
  std::string& head = entry->head;
  head.reserve(subject.size() + name.size() + commit.author_email.size() + 160);
  entry->tail.reserve(body.size() + 48);
  head.append("<entry>\n<title>"sv);
  XmlText(head, subject);
  head.append("</title>\n<updated>"sv)
      .append(entry->updated)
      .append("</updated>\n<author>\n<name>"sv);
  XmlText(head, name);
  head.append("</name>\n"sv);
  if (plain_email) {
    head.append("<email>"sv);
    XmlText(head, commit.author_email);
    head.append("</email>\n"sv);
  }
  head.append("</author>\n<published>"sv)
      .append(date, AtomDate(commit.author_time, date));
  entry->tail.append("</id>\n<content type='text'>\n"sv);
  XmlText(entry->tail, body);
  entry->tail.append("</content>\n</entry>\n"sv);
  return entry;
}

// Commit `id`'s entry, from the memo or read; null when the commit cannot be read. The commit's
// bytes come raw from the pack reader (no libgit2 object, parse or hash check); one of another
// shape than git writes is read by libgit2, as before.
std::shared_ptr<const AtomEntry> AtomEntryOf(RawObjects& objects, const git_oid& id,
                                             bool plain_email) {
  // One memo with the authors' addresses and one without (noplainemail).
  using Memo =
      SharedMemo<git_oid, std::shared_ptr<const AtomEntry>, OidHash, OidEqual, AtomEntryWeight>;
  static Memo with(kAtomGenerationBytes), without(kAtomGenerationBytes);
  Memo& memo = plain_email ? with : without;
  if (std::optional<std::shared_ptr<const AtomEntry>> known = memo.Find(id)) return *known;
  std::shared_ptr<const AtomEntry> entry;
  CommitFields parsed;
  if (const BackendObject raw = objects.Read(id, GIT_OBJECT_COMMIT);
      raw && ParsePlainCommit(raw.bytes(), &parsed)) {
    entry = MakeAtomEntry(parsed, plain_email);
  } else {
    git_commit* commit = nullptr;
    {
      const PackedReadsScope packed_reads;  // inflated by the pack reader (libdeflate)
      if (git_commit_lookup(&commit, objects.repo(), &id) != 0) return nullptr;
    }
    const CommitPtr owned(commit);
    entry = MakeAtomEntry(FieldsOf(commit), plain_email);
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
  if (!start) {
    // A name of something else than a commit (a tag of a tree or a blob, a blob's id) is cgit's
    // feed with no entries (its get_oid check takes any object); a name of nothing, its error.
    if (!NamesObject(ctx.lease.repo(), tip)) return ErrorPage(status, reason);
  }
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
  DateWalk walk(ctx.lease.repo(), start ? std::vector<git_oid>{*start} : std::vector<git_oid>{},
                nullptr, r.path);
  walk.set_deadline(DateWalk::Clock::now() + kWalkLimit);
  RawObjects objects(ctx.lease.repo());
  // What follows every entry's head: "</published>" and, with a host, the start of the link to
  // the commit's page (its hex id follows), escaped once for all entries.
  std::string link = "</published>\n";
  if (!repo_url.empty()) {
    Writer to_link(&link);
    to_link.Raw("<link rel='alternate' type='text/html' href='").Text(repo_url).Raw("commit/?id=");
  }
  bool first = true;
  git_oid id;
  for (unsigned n = 0; n < ctx.site.max_atom_items() && walk.NextId(&id); ++n) {
    const std::shared_ptr<const AtomEntry> entry =
        AtomEntryOf(objects, id, ctx.site.plain_email());
    if (!entry) break;
    if (first) out.Raw("<updated>").Raw(entry->updated).Raw("</updated>\n");
    first = false;
    char hex[GIT_OID_HEXSZ];
    git_oid_fmt(hex, &id);
    const std::string_view id_hex(hex, sizeof hex);
    out.Raw(entry->head).Raw(link);
    if (!repo_url.empty()) out.Raw(id_hex).Raw("'/>\n"sv);
    out.Raw("<id>urn:sha1:"sv).Raw(id_hex).Raw(entry->tail);
  }
  out.Raw("</feed>\n");
  // Not cgit's: its walk has no bound. A path walk cut by time ends the feed early, and a later
  // render may walk further.
  page.no_store = walk.stopped();
  return page;
}

}  // namespace shellac::gitfrag
