// The Atom feed (/REPO/atom/?h=): the newest max-atom-items commits of h= (or the default branch),
// as cgit 1.2.3 writes it. It depends on a branch, so it is rendered per request.
#include <ctime>
#include <string>

#include "gitfrag/history.h"
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
void XmlText(Writer& out, std::string_view text) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char* entity = text[i] == '&' ? "&amp;" : text[i] == '<' ? "&lt;" : text[i] == '>' ? "&gt;" : nullptr;
    if (entity == nullptr) continue;
    out.Raw(text.substr(start, i - start)).Raw(entity);
    start = i + 1;
  }
  out.Raw(text.substr(start));
}

}  // namespace

Page RenderAtom(const PageContext& ctx) {
  const Route& r = ctx.route;
  const std::string& tip = r.head.empty() ? ctx.lease.refs().head_branch() : r.head;
  int status = 200;
  std::string reason;
  CommitPtr start = ResolveCommit(ctx.lease.repo(), "", tip.empty() ? "HEAD" : tip, &status, &reason);
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
  DateWalk walk(ctx.lease.repo(), *git_commit_id(start.get()));
  bool first = true;
  for (unsigned n = 0; n < ctx.site.max_atom_items(); ++n) {
    CommitPtr commit = walk.Next();
    if (!commit) break;
    git_commit* raw = commit.get();
    const git_signature* author = git_commit_author(raw);
    const git_signature* committer = git_commit_committer(raw);
    if (first) out.Raw("<updated>").Raw(AtomDate(committer->when.time)).Raw("</updated>\n");
    first = false;
    const char* encoding = git_commit_message_encoding(raw);
    const std::string text = ToUtf8(git_commit_message_raw(raw), encoding);
    std::string_view subject, body;
    SplitMessage(text, &subject, &body);
    XmlText(out.Raw("<entry>\n<title>"), subject);
    out.Raw("</title>\n<updated>").Raw(AtomDate(committer->when.time));
    XmlText(out.Raw("</updated>\n<author>\n<name>"), ToUtf8(author->name, encoding));
    XmlText(out.Raw("</name>\n<email>"), author->email);
    out.Raw("</email>\n</author>\n<published>").Raw(AtomDate(author->when.time));
    const std::string hex = OidHex(*git_commit_id(raw));
    if (!repo_url.empty()) {
      out.Raw("</published>\n<link rel='alternate' type='text/html' href='")
          .Text(repo_url)
          .Raw("commit/?id=")
          .Raw(hex)
          .Raw("'/>\n<id>urn:sha1:");
    } else {
      out.Raw("</published>\n<id>urn:sha1:");
    }
    out.Raw(hex).Raw("</id>\n");
    XmlText(out.Raw("<content type='text'>\n"), body);
    out.Raw("</content>\n</entry>\n");
  }
  out.Raw("</feed>\n");
  return page;
}

}  // namespace shellac::gitfrag
