// The Atom feed (/REPO/atom/?h=): the newest max-atom-items commits of h= (or the default branch),
// as cgit 1.2.3 writes it. It depends on a branch, so it is rendered per request; an entry's text
// (all of it but the link to the commit's page) depends on the commit alone and is kept by id.
#include <ctime>
#include <memory>
#include <string>

#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

// "2021-03-04T13:07:08+00:00": cgit writes feed dates in UTC.
std::string AtomDate(git_time_t when) {
  const time_t t = static_cast<time_t>(when);
  struct tm tm;
  gmtime_r(&t, &tm);
  char date[40];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  return date;
}

// Text as cgit's html_txt escapes it: only '&', '<' and '>' (quotes stay as they are).
void XmlText(std::string& out, std::string_view text) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char* entity = text[i] == '&' ? "&amp;" : text[i] == '<' ? "&lt;" : text[i] == '>' ? "&gt;" : nullptr;
    if (entity == nullptr) continue;
    out.append(text.substr(start, i - start)).append(entity);
    start = i + 1;
  }
  out.append(text.substr(start));
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
  CommitPtr start;
  if (const std::optional<git_oid> branch = BranchTip(ctx, tip)) {  // the ref index's, no ref files
    const PackedReadsScope packed_reads;
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, ctx.lease.repo(), &*branch) == 0) start.reset(raw);
  }
  if (!start) start = ResolveCommit(ctx.lease.repo(), "", tip.empty() ? "HEAD" : tip, &status, &reason);
  if (!start) return ErrorPage(status, reason);
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
  DateWalk walk(ctx.lease.repo(), *git_commit_id(start.get()));
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
