// The Atom feed (/REPO/atom/?h=): the newest max-atom-items commits of h= (or the default branch),
// as cgit 1.2.3 writes it. It depends on a branch, so it is rendered per request; an entry's text
// (all of it but the link to the commit's page) depends on the commit alone and is kept by id.
#include <array>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>

#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
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

// Text as cgit's html_txt escapes it: only '&', '<' and '>' (quotes stay as they are). Runs of
// other bytes are found through a table and copied whole.
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

// The memo holds at most two generations of this many bytes of entries.
constexpr size_t kAtomGenerationBytes = size_t{4} << 20;

std::shared_ptr<const AtomEntry> MakeAtomEntry(git_commit* commit) {
  auto entry = std::make_shared<AtomEntry>();
  const git_signature* author = git_commit_author(commit);
  const git_signature* committer = git_commit_committer(commit);
  entry->updated = AtomDate(committer->when.time);
  const char* encoding = git_commit_message_encoding(commit);
  const std::string text = ToUtf8(git_commit_message_raw(commit), encoding);
  std::string_view subject, body;
  SplitMessage(text, &subject, &body);
  std::string& head = entry->head;
  head.append("<entry>\n<title>");
  XmlText(head, subject);
  head.append("</title>\n<updated>").append(entry->updated).append("</updated>\n<author>\n<name>");
  XmlText(head, ToUtf8(author->name, encoding));
  head.append("</name>\n<email>");
  XmlText(head, author->email);
  head.append("</email>\n</author>\n<published>").append(AtomDate(author->when.time));
  entry->tail.append("</id>\n<content type='text'>\n");
  XmlText(entry->tail, body);
  entry->tail.append("</content>\n</entry>\n");
  return entry;
}

// Commit `id`'s entry, from the memo or read; null when the commit cannot be read.
std::shared_ptr<const AtomEntry> AtomEntryOf(git_repository* repo, const git_oid& id) {
  static SharedMemo<git_oid, std::shared_ptr<const AtomEntry>, OidHash, OidEqual, AtomEntryWeight>
      memo(kAtomGenerationBytes);
  if (std::optional<std::shared_ptr<const AtomEntry>> known = memo.Find(id)) return *known;
  git_commit* raw = nullptr;
  {
    const PackedReadsScope packed_reads;  // inflated by the pack reader (libdeflate)
    if (git_commit_lookup(&raw, repo, &id) != 0) return nullptr;
  }
  const CommitPtr commit(raw);
  std::shared_ptr<const AtomEntry> entry = MakeAtomEntry(raw);
  memo.Add(id, entry);
  return entry;
}

}  // namespace

Page RenderAtom(const PageContext& ctx) {
  const Route& r = ctx.route;
  const std::string& tip = r.head.empty() ? ctx.lease.refs().head_branch() : r.head;
  int status = 200;
  std::string reason;
  // The walk's start: a branch's tip from the ref index (no ref files), when its header says it
  // is a commit (no commit read: the walk needs only its id); else the revision, peeled.
  std::optional<git_oid> start = BranchTip(ctx, tip);
  if (start) {
    const PackedReadsScope packed_reads;
    OdbPtr odb;
    git_odb* raw_odb = nullptr;
    size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    if (git_repository_odb(&raw_odb, ctx.lease.repo()) == 0) odb.reset(raw_odb);
    if (!odb || git_odb_read_header(&size, &type, odb.get(), &*start) != 0 ||
        type != GIT_OBJECT_COMMIT)
      start.reset();
  }
  if (!start) {
    const CommitPtr commit =
        ResolveCommit(ctx.lease.repo(), "", tip.empty() ? "HEAD" : tip, &status, &reason);
    if (!commit) return ErrorPage(status, reason);
    start = *git_commit_id(commit.get());
  }
  Page page;
  page.content_type = "text/xml; charset=utf-8";
  Writer& out = ctx.out;
  out.Raw("<feed xmlns='http://www.w3.org/2005/Atom'>\n<title>");
  XmlText(out, ctx.repo.name);
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
  // The walk knows the commits' order from their links (the commit-graph or the links memo): a
  // commit whose entry is known is not read.
  DateWalk walk(ctx.lease.repo(), *start);
  bool first = true;
  git_oid id;
  for (unsigned n = 0; n < ctx.site.max_atom_items() && walk.NextId(&id); ++n) {
    const std::shared_ptr<const AtomEntry> entry = AtomEntryOf(ctx.lease.repo(), id);
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
  return page;
}

}  // namespace shellac::gitfrag
