// The log page: 50 commits per page from h= (or id=, or HEAD), newest first, with decorations and
// a pager (ofs=).
#include <ctime>
#include <string>

#include "gitfrag/history.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

void WriteLogRow(const PageContext& ctx, git_commit* raw, int64_t now) {
  Writer& out = ctx.out;
  const git_oid oid = *git_commit_id(raw);
  const char* encoding = git_commit_message_encoding(raw);
  std::string_view subject, body;
  const std::string text = ToUtf8(git_commit_message_raw(raw), encoding);
  SplitMessage(text, &subject, &body);
  const std::string hex = OidHex(oid);
  out.Raw("<tr><td>");
  WriteAge(out, git_commit_committer(raw)->when, now, 60 * 86400);
  out.Raw("</td><td><a href='");
  RepoUrl(ctx, "commit", "", {{"h", ctx.route.head}, {"id", hex}});
  out.Raw("'>");
  WriteSubject(out, subject);
  out.Raw("</a>");
  WriteDecorations(ctx, oid);
  out.Raw("</td><td>").Text(ToUtf8(git_commit_author(raw)->name, encoding)).Raw("</td></tr>\n");
}

void WriteSubject(Writer& out, std::string_view subject) {
  // cgit shortens subjects longer than 80 bytes to 77 and "..." (max-msg-len), in bytes: the
  // cut may fall inside a UTF-8 sequence, as cgit's does. An empty one gets cgit's placeholder.
  if (subject.size() > 80)
    out.Text(subject.substr(0, 77)).Raw("...");
  else
    out.Text(subject.empty() ? "(no commit message)" : subject);
}

Page RenderLog(const PageContext& ctx) {
  constexpr unsigned kPerPage = 50;
  int status = 200;
  std::string reason;
  git_repository* repo = ctx.lease.repo();
  CommitPtr start = ResolveCommit(repo, ctx.route.id, ctx.route.head, &status, &reason);
  if (!start) return ErrorPage(status, reason);
  DateWalk walk(repo, *git_commit_id(start.get()));

  Writer& out = ctx.out;
  const std::string title =
      ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);
  PageStart(ctx, title, "log", ctx.route.id);
  out.Raw(
      "<table class='list nowrap'><tr class='nohover'><th class='left'>Age</th>"
      "<th class='left'>Commit message (<a href='");
  RepoUrl(ctx, "log", "", {{"h", ctx.route.head}, {"id", ctx.route.id}, {"showmsg", "1"}});
  out.Raw("'>Expand</a>)</th><th class='left'>Author</th></tr>\n");
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  unsigned index = 0;
  bool more = false;
  while (CommitPtr commit = walk.Next()) {
    if (index++ < ctx.route.ofs) continue;
    if (index > ctx.route.ofs + kPerPage) {
      more = true;
      break;
    }
    WriteLogRow(ctx, commit.get(), now);
  }
  out.Raw("</table><ul class='pager'>");
  if (ctx.route.ofs > 0) {
    const unsigned prev = ctx.route.ofs > kPerPage ? ctx.route.ofs - kPerPage : 0;
    const std::string ofs = prev ? std::to_string(prev) : "";
    out.Raw("<li><a href='");
    RepoUrl(ctx, "log", "", {{"h", ctx.route.head}, {"id", ctx.route.id}, {"ofs", ofs}});
    out.Raw("'>[prev]</a></li>");
  }
  if (more) {
    out.Raw("<li><a href='");
    RepoUrl(ctx, "log", "",
            {{"h", ctx.route.head},
             {"id", ctx.route.id},
             {"ofs", std::to_string(ctx.route.ofs + kPerPage)}});
    out.Raw("'>[next]</a></li>");
  }
  out.Raw("</ul>");
  PageEnd(out);
  return Page{};
}

}  // namespace shellac::gitfrag
