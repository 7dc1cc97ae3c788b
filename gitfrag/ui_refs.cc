// The pages about refs, as cgit 1.2.3 writes them: the summary (branches, tags, the latest
// commits, clone URLs), refs (every branch and tag, or one of the two tables) and tag (one tag,
// annotated or lightweight). They depend on the refs, so each is a frame rendered per request.
#include <algorithm>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {


// One branch or tag with what its row shows.
struct RefRow {
  std::string_view name;  // short name ("master", "v1.0"), owned by the page's ref index
  git_oid id{};      // what the ref names: a commit, or for a tag maybe a tag object
  git_object_t type = GIT_OBJECT_INVALID;
  int64_t age = 0;   // cgit's sort key: committer date, or tagger date (0: none)
};

git_object_t TypeOf(const ObjectPtr& object) { return git_object_type(object.get()); }
git_commit* AsCommit(const ObjectPtr& object) { return reinterpret_cast<git_commit*>(object.get()); }
git_tag* AsTag(const ObjectPtr& object) { return reinterpret_cast<git_tag*>(object.get()); }

// An object's type and cgit's age for it, which its id fixes: kept in a SharedMemo, so a summary
// (the newest few of a thousand tags) reads only the objects it shows once any repository or fork
// with the same tags was listed.
struct Age {
  git_object_t type = GIT_OBJECT_INVALID;
  int64_t age = 0;
};
constexpr size_t kAgesGeneration = 100000;  // objects per generation

// nullopt when `repo` has no such object.
std::optional<Age> ObjectAge(git_repository* repo, const git_oid& id) {
  static SharedMemo<git_oid, Age, OidHash, OidEqual> memo(kAgesGeneration);
  if (std::optional<Age> known = memo.Find(id)) return known;
  git_object* raw = nullptr;
  if (git_object_lookup(&raw, repo, &id, GIT_OBJECT_ANY) != 0) return std::nullopt;
  const ObjectPtr object(raw);
  Age age;
  age.type = git_object_type(raw);
  if (age.type == GIT_OBJECT_COMMIT) {
    age.age = git_commit_time(reinterpret_cast<git_commit*>(raw));
  } else if (age.type == GIT_OBJECT_TAG) {
    const git_signature* tagger = git_tag_tagger(reinterpret_cast<git_tag*>(raw));
    age.age = tagger != nullptr ? tagger->when.time : 0;
  }
  memo.Add(id, age);
  return age;
}

// Every ref under `prefix` ("refs/heads/", "refs/tags/") in name order (git's), from the ref
// index, with its object's type and age; refs whose object the repository lacks are left out.
std::vector<RefRow> ListRefs(const PageContext& ctx, std::string_view prefix) {
  std::vector<RefRow> rows;
  for (const RefIndex::Ref& ref : ctx.lease.refs().refs()) {
    if (!ref.name.starts_with(prefix)) continue;
    const std::optional<Age> age = ObjectAge(ctx.lease.repo(), ref.id);
    if (!age) continue;
    rows.push_back(RefRow{ref.name.substr(prefix.size()), ref.id, age->type, age->age});
  }
  return rows;
}

// What a branch or tag row shows of its object, which the object's id fixes: kept in a
// SharedMemo, so the refs page of a fork lists a thousand tags without reading a tag object that
// another repository's listing read.
struct RowFacts {
  git_object_t type = GIT_OBJECT_INVALID;         // the object's
  git_object_t target_type = GIT_OBJECT_INVALID;  // a tag object's target
  git_oid target{};
  bool has_who = false;  // a tag object's tagger (a commit always has its author)
  std::string who;       // a tag's tagger name as written; a commit's author name in UTF-8
  std::string subject;   // a commit's subject in UTF-8
  git_time when{};       // a tag's tagger date; a commit's committer date
};
constexpr size_t kFactsGeneration = 50000;  // objects per generation

// nullopt when the object cannot be read.
std::optional<RowFacts> Facts(const PageContext& ctx, const git_oid& id) {
  static SharedMemo<git_oid, RowFacts, OidHash, OidEqual> memo(kFactsGeneration);
  if (std::optional<RowFacts> known = memo.Find(id)) return known;
  git_object* raw = nullptr;
  if (git_object_lookup(&raw, ctx.lease.repo(), &id, GIT_OBJECT_ANY) != 0) return std::nullopt;
  const ObjectPtr object(raw);
  RowFacts facts;
  facts.type = TypeOf(object);
  if (facts.type == GIT_OBJECT_TAG) {
    git_tag* tag = AsTag(object);
    facts.target_type = git_tag_target_type(tag);
    facts.target = *git_tag_target_id(tag);
    if (const git_signature* tagger = git_tag_tagger(tag)) {
      facts.has_who = true;
      facts.who = tagger->name;
      facts.when = tagger->when;
    }
  } else if (facts.type == GIT_OBJECT_COMMIT) {
    git_commit* commit = AsCommit(object);
    const char* encoding = git_commit_message_encoding(commit);
    const std::string text = ToUtf8(git_commit_message_raw(commit), encoding);
    std::string_view subject, body;
    SplitMessage(text, &subject, &body);
    facts.subject = std::string(subject);
    facts.has_who = true;
    facts.who = ToUtf8(git_commit_author(commit)->name, encoding);
    facts.when = git_commit_committer(commit)->when;
  }
  memo.Add(id, facts);
  return facts;
}

// cgit's age order: newest first, undated last; equal ages keep name order (glibc's qsort is a
// merge sort). `rows` come in name order (ListRefs) and names differ, so ties broken by name make
// it a total order: only the first `count` rows are put in it (a summary shows the newest 10 of
// a thousand tags).
void SortByAge(std::vector<RefRow>* rows, size_t count) {
  const auto newer = [](const RefRow& a, const RefRow& b) {
    if (a.age != b.age && a.age != 0 && b.age != 0) return a.age > b.age;
    if ((a.age == 0) != (b.age == 0)) return b.age == 0;
    return a.name < b.name;
  };
  std::partial_sort(rows->begin(), rows->begin() + static_cast<ptrdiff_t>(count), rows->end(),
                    newer);
}

const char* TypeName(git_object_t type) {
  switch (type) {
    case GIT_OBJECT_COMMIT:
      return "commit";
    case GIT_OBJECT_TREE:
      return "tree";
    case GIT_OBJECT_TAG:
      return "tag";
    default:
      return "blob";
  }
}

// cgit's object link: "commit 0123456789..." to the object's page, keeping h=.
void WriteObjectLink(const PageContext& ctx, git_object_t type, const git_oid& oid) {
  const std::string hex = OidHex(oid);
  const char* name = TypeName(type);
  ctx.out.Raw("<a href='");
  RepoUrl(ctx, name, "", {{"h", ctx.route.head}, {"id", hex}});
  ctx.out.Raw("'>").Raw(name).Raw(" ").Raw(std::string_view(hex).substr(0, 10)).Raw("...</a>");
}

void WriteBranchTable(const PageContext& ctx, unsigned max, int64_t now) {
  Writer& out = ctx.out;
  out.Raw(
      "<tr class='nohover'><th class='left'>Branch</th><th class='left'>Commit message</th>"
      "<th class='left'>Author</th><th class='left' colspan='2'>Age</th></tr>\n");
  std::vector<RefRow> rows = ListRefs(ctx, "refs/heads/");
  const size_t count = max == 0 ? rows.size() : std::min<size_t>(max, rows.size());
  if (ctx.repo.branch_sort_age) {
    SortByAge(&rows, count);  // cgit's branch-sort=age: the newest `max`, newest first
  } else if (count < rows.size()) {
    // The newest `max` branches, shown in name order.
    SortByAge(&rows, count);
    std::sort(rows.begin(), rows.begin() + static_cast<ptrdiff_t>(count),
              [](const RefRow& a, const RefRow& b) { return a.name < b.name; });
  }
  const std::string& default_branch = ctx.lease.refs().head_branch();
  for (size_t i = 0; i < count; ++i) {
    RefRow& row = rows[i];
    if (row.type != GIT_OBJECT_COMMIT) continue;  // cgit skips such a branch
    const std::optional<RowFacts> facts = Facts(ctx, row.id);
    if (!facts) continue;
    const std::string_view h =
        row.name == default_branch ? std::string_view() : std::string_view(row.name);
    out.Raw("<tr><td><a href='");
    RepoUrl(ctx, "log", "", {{"h", h}});
    out.Raw("'>").Text(row.name).Raw("</a></td><td><a href='");
    RepoUrl(ctx, "commit", "", {{"h", h}});
    out.Raw("'>");
    WriteSubject(out, facts->subject);
    out.Raw("</a></td><td>").Text(facts->who);
    out.Raw("</td><td colspan='2'>");
    WriteAge(out, facts->when, now, -1);
    out.Raw("</td></tr>\n");
  }
  if (count < rows.size()) {
    out.Raw("<tr class='nohover'><td colspan='4'><a href='");
    RepoUrl(ctx, "refs", "heads", {{"h", ctx.route.head}});
    out.Raw("'>[...]</a></td></tr>");
  }
}

void WriteTagTable(const PageContext& ctx, unsigned max, int64_t now) {
  Writer& out = ctx.out;
  std::vector<RefRow> rows = ListRefs(ctx, "refs/tags/");
  if (rows.empty()) return;
  const size_t count = max == 0 ? rows.size() : std::min<size_t>(max, rows.size());
  SortByAge(&rows, count);
  out.Raw(
      "<tr class='nohover'><th class='left'>Tag</th><th class='left'>Download</th>"
      "<th class='left'>Author</th><th class='left' colspan='2'>Age</th></tr>\n");
  for (size_t i = 0; i < count; ++i) {
    RefRow& row = rows[i];
    const std::optional<RowFacts> facts = Facts(ctx, row.id);
    if (!facts) continue;
    out.Raw("<tr><td><a href='");
    RepoUrl(ctx, "tag", "", {{"h", row.name}});
    out.Raw("'>").Text(row.name).Raw("</a></td><td>");
    if (facts->type == GIT_OBJECT_TAG) {
      WriteObjectLink(ctx, facts->target_type, facts->target);
      out.Raw("</td><td>");
      if (facts->has_who) out.Text(facts->who);
      out.Raw("</td><td colspan='2'>");
      if (facts->has_who && facts->when.time > 0) WriteAge(out, facts->when, now, -1);
    } else {
      WriteObjectLink(ctx, facts->type, row.id);
      out.Raw("</td><td>");
      if (facts->type == GIT_OBJECT_COMMIT) {
        out.Text(facts->who);
        out.Raw("</td><td colspan='2'>");
        // cgit shows a lightweight tag's date in UTC.
        git_time when = facts->when;
        when.offset = 0;
        WriteAge(out, when, now, -1);
      } else {
        out.Raw("</td><td colspan='2'>");
      }
    }
    out.Raw("</td></tr>\n");
  }
  if (count < rows.size()) {
    out.Raw("<tr class='nohover'><td colspan='4'><a href='");
    RepoUrl(ctx, "refs", "tags", {{"h", ctx.route.head}});
    out.Raw("'>[...]</a></td></tr>");
  }
}

std::string RepoTitle(const PageContext& ctx) {
  return ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);
}

// The summary's spacer rows: as wide as its log (cgit: 3 columns, and Files and Lines when shown).
std::string Spacer(const std::string& columns) {
  return "<tr class='nohover'><td colspan='" + columns + "'>&nbsp;</td></tr>";
}

void WriteCloneUrls(const PageContext& ctx, const std::string& columns) {
  bool first = true;
  for (const std::string& url : CloneUrls(ctx)) {
    if (first) {
      ctx.out.Raw(Spacer(columns));
      ctx.out.Raw("<tr class='nohover'><th class='left' colspan='" + columns + "'>Clone</th></tr>\n");
      first = false;
    }
    ctx.out.Raw("<tr><td colspan='" + columns + "'><a rel='vcs-git' href='");
    WriteUrlAttribute(ctx.out, url);
    ctx.out.Raw("' title='").Text(ctx.repo.name).Raw(" Git repository'>").Text(url);
    ctx.out.Raw("</a></td></tr>\n");
  }
}

// 404 with the reason when h= names no object (cgit: "Invalid branch"); a tag of a blob or a
// tree is a valid h= (the summary's log from it is empty).
bool CheckHead(const PageContext& ctx, Page* error) {
  if (ctx.route.head.empty()) return true;
  int status = 200;
  std::string reason;
  if (ResolveCommit(ctx.lease.repo(), "", ctx.route.head, &status, &reason) ||
      NamesObject(ctx.lease.repo(), ctx.route.head))
    return true;
  *error = ErrorPage(status, "invalid branch: " + reason);
  return false;
}

}  // namespace

Page RenderSummary(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  Page error;
  if (!CheckHead(page_ctx, &error)) return error;
  const Site::SummaryOptions& options = ctx.site.summary();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  Writer& out = ctx.out;
  PageStart(ctx, RepoTitle(ctx), "summary", ctx.route.id);
  const std::string columns =
      std::to_string(3 + ctx.repo.enable_log_filecount + ctx.repo.enable_log_linecount);
  out.Raw("<table summary='repository info' class='list nowrap'>");
  WriteBranchTable(ctx, options.branches, now);
  out.Raw(Spacer(columns));
  WriteTagTable(ctx, options.tags, now);
  if (options.log > 0) {
    out.Raw(Spacer(columns));
    out.Raw(
        "<tr class='nohover'><th class='left'>Age</th><th class='left'>Commit message</th>"
        "<th class='left'>Author</th>");
    if (ctx.repo.enable_log_filecount) out.Raw("<th class='left'>Files</th>");
    if (ctx.repo.enable_log_linecount) out.Raw("<th class='left'>Lines</th>");
    out.Raw("</tr>\n");
    int status = 200;
    std::string reason;
    // The log starts at h= (or HEAD) as cgit's does; id= does not move it.
    CommitPtr start = ResolveCommit(ctx.lease.repo(), "", page_ctx.route.head, &status, &reason);
    if (start) {
      DateWalk walk(ctx.lease.repo(), *git_commit_id(start.get()));
      unsigned shown = 0;
      while (CommitPtr commit = walk.Next()) {
        if (shown++ == options.log) {
          out.Raw("<tr class='nohover'><td colspan='" + columns + "'><a href='");
          RepoUrl(ctx, "log", "", {{"h", ctx.route.head}});
          out.Raw("'>[...]</a></td></tr>\n");
          break;
        }
        WriteLogRow(ctx, commit.get(), now);
      }
    }
  }
  WriteCloneUrls(ctx, columns);
  out.Raw("</table>");
  PageEnd(out);
  return Page{};
}

Page RenderRefs(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  Page error;
  if (!CheckHead(page_ctx, &error)) return error;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  Writer& out = ctx.out;
  // The tabs of a refs page name no path.
  Route tabs_route = link_route;
  tabs_route.path.clear();
  const PageContext tabs_ctx{ctx.site, ctx.chrome, tabs_route, ctx.repo, ctx.lease, ctx.out};
  PageStart(tabs_ctx, RepoTitle(ctx), "refs", ctx.route.id);
  out.Raw("<table class='list nowrap'>");
  if (ctx.route.path == "heads") {
    WriteBranchTable(ctx, 0, now);
  } else if (ctx.route.path == "tags") {
    WriteTagTable(ctx, 0, now);
  } else {
    WriteBranchTable(ctx, 0, now);
    out.Raw("<tr class='nohover'><td colspan='5'>&nbsp;</td></tr>");
    WriteTagTable(ctx, 0, now);
  }
  out.Raw("</table>");
  PageEnd(out);
  return Page{};
}

Page RenderTag(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  // The tag named by id=, else by h=, else (as cgit) the default branch's name.
  const Route& r = page_ctx.route;
  const std::string name =
      !r.id.empty() ? r.id : !r.head.empty() ? r.head : ctx.lease.refs().head_branch();
  git_repository* repo = ctx.lease.repo();
  git_reference* raw_ref = nullptr;
  const std::string full = "refs/tags/" + name;
  if (name.empty() || git_reference_lookup(&raw_ref, repo, full.c_str()) != 0)
    return ErrorPage(404, "bad tag reference: " + name);
  ReferencePtr ref(raw_ref);
  if (git_reference_type(ref.get()) == GIT_REFERENCE_SYMBOLIC) {
    git_reference* resolved = nullptr;
    if (git_reference_resolve(&resolved, ref.get()) != 0)
      return ErrorPage(404, "bad tag reference: " + name);
    ref.reset(resolved);
  }
  git_object* raw_object = nullptr;
  if (git_object_lookup(&raw_object, repo, git_reference_target(ref.get()), GIT_OBJECT_ANY) != 0)
    return ErrorPage(404, "bad object id for tag " + name);
  const ObjectPtr object(raw_object);
  Writer& out = ctx.out;
  PageStart(ctx, RepoTitle(ctx), "tag", ctx.route.id);
  out.Raw("<table class='commit-info'>\n<tr><td>tag name</td><td>").Text(name);
  if (TypeOf(object) == GIT_OBJECT_TAG) {
    git_tag* tag = AsTag(object);
    out.Raw(" (").Raw(OidHex(*git_object_id(object.get()))).Raw(")</td></tr>\n");
    const git_signature* tagger = git_tag_tagger(tag);
    if (tagger != nullptr && tagger->when.time > 0)
      out.Raw("<tr><td>tag date</td><td>").Text(FormatDate(tagger->when)).Raw("</td></tr>\n");
    if (tagger != nullptr) {
      out.Raw("<tr><td>tagged by</td><td>").Text(tagger->name);
      if (ctx.site.plain_email()) out.Raw(" &lt;").Text(tagger->email).Raw("&gt;");
      out.Raw("</td></tr>\n");
    }
    out.Raw("<tr><td>tagged object</td><td class='oid'>");
    WriteObjectLink(ctx, git_tag_target_type(tag), *git_tag_target_id(tag));
    out.Raw("</td></tr>\n</table>\n");
    // The subject is the first line, the message every byte after it.
    const char* message = git_tag_message(tag);
    if (message != nullptr) {
      const std::string_view text = message;
      const size_t eol = text.find('\n');
      out.Raw("<div class='commit-subject'>").Text(text.substr(0, eol)).Raw("</div>");
      if (eol != std::string_view::npos)
        out.Raw("<div class='commit-msg'>").Text(text.substr(eol + 1)).Raw("</div>");
    }
  } else {
    out.Raw("</td></tr>\n<tr><td>tagged object</td><td class='oid'>");
    WriteObjectLink(ctx, TypeOf(object), *git_object_id(object.get()));
    out.Raw("</td></tr>\n</table>\n");
  }
  PageEnd(out);
  return Page{};
}

}  // namespace shellac::gitfrag
