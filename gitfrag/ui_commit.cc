// The commit page frame: header, tabs, diff options, commit info with decorations, message, and
// an ESI include where the diff goes (the fragment is rendered once per commit and options and
// shared by every repository and branch that shows this commit).
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {
void WriteOptionsPanel(const PageContext& ctx, std::string_view id) {
  Writer& out = ctx.out;
  const DiffOptions& o = ctx.route.diff;
  out.Raw("<div class='cgit-panel'><b>diff options</b><form method='get'>");
  if (!ctx.route.head.empty())
    out.Raw("<input type='hidden' name='h' value='").Text(ctx.route.head).Raw("'/>");
  out.Raw("<input type='hidden' name='id' value='").Text(id).Raw("'/>");
  if (!ctx.route.id2.empty())
    out.Raw("<input type='hidden' name='id2' value='").Text(ctx.route.id2).Raw("'/>");
  out.BeginShared();  // the rest depends on the options alone
  out.Raw(
      "<table><tr><td colspan='2'/></tr><tr><td class='label'>context:</td><td class='ctrl'>"
      "<select name='context' onchange='this.form.submit();'>");
  static const int kContexts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 35, 40};
  for (int c : kContexts) {
    out.Raw("<option value='").Number(c).Raw("'");
    if (c == o.context) out.Raw(" selected='selected'");
    out.Raw(">").Number(c).Raw("</option>");
  }
  out.Raw(
      "</select></td></tr><tr><td class='label'>space:</td><td class='ctrl'>"
      "<select name='ignorews' onchange='this.form.submit();'>");
  out.Raw(o.ignorews ? "<option value='0'>include</option><option value='1' "
                       "selected='selected'>ignore</option>"
                     : "<option value='0' selected='selected'>include</option><option "
                       "value='1'>ignore</option>");
  out.Raw(
      "</select></td></tr><tr><td class='label'>mode:</td><td class='ctrl'>"
      "<select name='dt' onchange='this.form.submit();'>");
  static const char* kModes[] = {"unified", "ssdiff", "stat only"};
  for (int m = 0; m < 3; ++m) {
    out.Raw("<option value='").Number(static_cast<uint64_t>(m)).Raw("'");
    if (m == o.dt) out.Raw(" selected='selected'");
    out.Raw(">").Raw(kModes[m]).Raw("</option>");
  }
  out.Raw(
      "</select></td></tr><tr><td/><td class='ctrl'><noscript><input type='submit' value='reload'/>"
      "</noscript></td></tr></table></form></div>");
  out.EndShared();
}

namespace {

void WriteSignature(const PageContext& ctx, const char* label, const git_signature* sig,
                    const char* encoding) {
  ctx.out.Raw("<tr><th>").Raw(label).Raw("</th><td>").Text(ToUtf8(sig->name, encoding));
  if (ctx.site.plain_email()) ctx.out.Raw(" &lt;").Text(ToUtf8(sig->email, encoding)).Raw("&gt;");
  ctx.out.Raw("</td><td class='right'>");
  ctx.out.Text(FormatDate(sig->when)).Raw("</td></tr>\n");
}

}  // namespace

// Decorations as cgit shows them after a subject: branches link to their log, tags to their tag
// page, HEAD, refs/stash and refs/replace/ to the commit itself. Refs git gives no decoration
// type (refs/pull/, refs/notes/, ...) are left out, and so are remote-tracking branches (cgit's
// enable-remote-branches is off by default).
void WriteDecorations(const PageContext& ctx, const git_oid& oid, std::string_view path) {
  const std::span<const Decoration> decorations = ctx.lease.refs().For(oid);
  if (decorations.empty()) return;
  Writer& out = ctx.out;
  const std::string hex = OidHex(oid);
  out.Raw("<span class='decoration'>");
  for (const Decoration& d : decorations) {
    std::string_view name = d.name;
    if (d.kind == Decoration::Kind::kRemote) continue;
    if (d.kind == Decoration::Kind::kOther && name != "refs/stash" &&
        !name.starts_with("refs/replace/"))
      continue;
    switch (d.kind) {
      case Decoration::Kind::kBranch:
        name.remove_prefix(11);
        out.Raw("<a class='branch-deco' href='");
        // cgit's branch link keeps the page's path and showmsg=.
        RepoUrl(ctx, "log", path,
                {{"h", name == ctx.lease.refs().head_branch() ? std::string_view() : name},
                 {"showmsg", ctx.route.showmsg ? "1" : ""}});
        break;
      case Decoration::Kind::kTag:
      case Decoration::Kind::kAnnotatedTag:
        name.remove_prefix(10);
        out.Raw(d.kind == Decoration::Kind::kTag ? "<a class='tag-deco' href='"
                                                 : "<a class='tag-annotated-deco' href='");
        RepoUrl(ctx, "tag", "", {{"h", name}});
        break;
      default:
        out.Raw("<a class='deco' href='");
        RepoUrl(ctx, "commit", path,
                {{"h", ctx.route.head}, {"id", hex}, {"follow", ctx.route.follow ? "1" : ""}});
        break;
    }
    out.Raw("'>").Text(name).Raw("</a>");
  }
  out.Raw("</span>");
}

namespace {

// The commit-info table, then the subject with its decorations and the message.
void WriteCommitInfo(const PageContext& ctx, git_commit* commit) {
  Writer& out = ctx.out;
  const char* encoding = git_commit_message_encoding(commit);
  const std::string hex = OidHex(*git_commit_id(commit));
  out.Raw("<table summary='commit info' class='commit-info'>\n");
  WriteSignature(ctx, "author", git_commit_author(commit), encoding);
  WriteSignature(ctx, "committer", git_commit_committer(commit), encoding);
  // The commit, patch, parent and diff links keep the page's path, as cgit's; the patch link names
  // no branch (cgit asks for it without one).
  out.Raw("<tr><th>commit</th><td colspan='2' class='oid'><a href='");
  RepoUrl(ctx, "commit", ctx.route.path, {{"h", ctx.route.head}, {"id", hex}});
  out.Raw("'>").Raw(hex).Raw("</a> (<a href='");
  RepoUrl(ctx, "patch", ctx.route.path, {{"id", hex}});
  // The tree and diff links name the commit as the page was asked for it (an abbreviated id as
  // given), as cgit's.
  const std::string_view asked =
      !ctx.route.id.empty() && hex.starts_with(ctx.route.id) ? std::string_view(ctx.route.id) : hex;
  out.Raw("'>patch</a>)</td></tr>\n<tr><th>tree</th><td colspan='2' class='oid'><a href='");
  RepoUrl(ctx, "tree", "", {{"h", ctx.route.head}, {"id", asked}});
  out.Raw("'>").Raw(OidHex(*git_commit_tree_id(commit))).Raw("</a>");
  if (!ctx.route.path.empty()) {
    out.Raw(" /<a href='");
    RepoUrl(ctx, "tree", ctx.route.path, {{"h", ctx.route.head}, {"id", asked}});
    out.Raw("'>").Text(ctx.route.path).Raw("</a>");
  }
  out.Raw("</td></tr>\n");
  const unsigned parents = git_commit_parentcount(commit);
  for (unsigned i = 0; i < parents; ++i) {
    const std::string parent = OidHex(*git_commit_parent_id(commit, i));
    out.Raw("<tr><th>parent</th><td colspan='2' class='oid'><a href='");
    RepoUrl(ctx, "commit", ctx.route.path, {{"h", ctx.route.head}, {"id", parent}});
    out.Raw("'>").Raw(parent).Raw("</a> (<a href='");
    RepoUrl(ctx, "diff", ctx.route.path, {{"h", ctx.route.head}, {"id", asked}, {"id2", parent}});
    out.Raw("'>diff</a>)</td></tr>");
  }
  out.Raw("</table>\n");
  std::string_view subject, body;
  const std::string text = ToUtf8(git_commit_message_raw(commit), encoding);
  SplitMessage(text, &subject, &body);
  out.Raw("<div class='commit-subject'>").Text(subject);
  WriteDecorations(ctx, *git_commit_id(commit), ctx.route.path);
  out.Raw("</div><div class='commit-msg'>").Text(body).Raw("</div>");
}

}  // namespace

Page RenderCommit(const PageContext& ctx) {
  // The commit and its parents (their ids and subjects in the header) read by the pack reader,
  // not by libgit2's own packed backend (zlib, no delta bases kept).
  const PackedReadsScope packed_reads;
  int status = 200;
  std::string reason;
  git_repository* repo = ctx.lease.repo();
  // Resolving in this repository is the check that the commit exists here before the shared,
  // repository-neutral fragment is included.
  CommitPtr commit = ResolveCommit(repo, ctx.route.id, ctx.route.head, &status, &reason);
  if (!commit) return ErrorPage(status, reason);
  const git_oid& oid = *git_commit_id(commit.get());
  const std::string hex = OidHex(oid);

  std::string_view subject, body;
  const std::string text =
      ToUtf8(git_commit_message_raw(commit.get()), git_commit_message_encoding(commit.get()));
  SplitMessage(text, &subject, &body);
  const std::string title = std::string(subject) + " - " + ctx.repo.name + " - " +
                            (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);

  Page page;
  page.esi = true;
  {
    Writer& out = ctx.out;
    PageStart(ctx, title, "commit", ctx.route.id);
    WriteOptionsPanel(ctx, ctx.route.id);
    WriteCommitInfo(ctx, commit.get());
    // The URL is built from hex ids, numbers and the percent-encoded repository URL only, so it
    // needs no HTML escaping; the ESI processor removes the tag before any client sees it.
    // An octopus merge shows no diff, as in cgit (its first-parent diff is all the other
    // branches' work).
    if (git_commit_parentcount(commit.get()) < 3) {
      out.Include(
          ctx.site.FragmentUrl(ctx.route.repo, hex, "", EffectiveDiffOptions(ctx), ctx.route.path));
    }
    PageEnd(out);
  }
  return page;
}

}  // namespace shellac::gitfrag
