#include "gitfrag/render.h"

#include <iconv.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "base/text.h"
#include "gitfrag/byte_scan.h"
#include "gitfrag/commit_graph.h"
#include "gitfrag/line_diff.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/raw_objects.h"
#include "gitfrag/renames.h"
#include "gitfrag/tree_diff.h"

namespace shellac::gitfrag {

void QueryArgs(Writer& out, Args args) {
  char sep = '?';
  for (const auto& [key, value] : args) {
    if (value.empty()) continue;
    if (sep == '?')
      out.Raw("?");
    else
      out.Raw("&amp;");
    sep = '&';
    out.Raw(key).Raw("=").UrlPart(value, /*keep_slash=*/true);
  }
}

namespace {

// QueryArgs' bytes as a string (a value escaped as Writer::UrlPart writes it: nothing in a
// percent-escaped value needs an HTML escape).
std::string QueryText(Args args) {
  std::string query;
  for (const auto& [key, value] : args) {
    if (value.empty()) continue;
    query += query.empty() ? "?" : "&amp;";
    query += key;
    query += '=';
    AppendUrlEncoded(&query, value, /*keep_slash=*/true);
  }
  return query;
}

}  // namespace

void RepoUrl(const PageContext& ctx, std::string_view page, std::string_view path, Args args) {
  ctx.out.Text(ctx.chrome.virtual_root).UrlPart(ctx.repo.url, /*keep_slash=*/true).Raw("/");
  if (!page.empty()) ctx.out.Raw(page).Raw("/");
  ctx.out.UrlPart(path, /*keep_slash=*/true);
  QueryArgs(ctx.out, args);
}

void LogUrl(const PageContext& ctx, std::string_view path, unsigned ofs, bool showmsg,
            bool follow) {
  const Route& r = ctx.route;
  Writer& out = ctx.out;
  RepoUrl(ctx, "log", path, {});
  char sep = '?';
  auto arg = [&](std::string_view key, std::string_view value, bool keep_empty) {
    if (value.empty() && !keep_empty) return;
    out.Raw(sep == '?' ? "?" : "&amp;").Raw(key).Raw("=");
    sep = '&';
    // cgit writes a blank in a query value as '+'.
    for (size_t start = 0;;) {
      const size_t blank = value.find(' ', start);
      out.UrlPart(value.substr(start, blank - start), /*keep_slash=*/true);
      if (blank == std::string_view::npos) break;
      out.Raw("+");
      start = blank + 1;
    }
  };
  arg("h", r.head, false);
  arg("id", r.id, false);
  if (r.grep && r.search) {
    arg("qt", *r.grep, true);
    arg("q", *r.search, true);
  }
  arg("ofs", ofs > 0 ? std::to_string(ofs) : "", false);
  if (showmsg) arg("showmsg", "1", false);
  if (follow) arg("follow", "1", false);
}

namespace {

// Whether the refs alone fix ChooseReadme's answer: every readme entry is REF:PATH and each REF
// (the branch shown when empty) is a branch of the ref index, whose tip's tree gives the answer.
bool ReadmeFixedByRefs(const PageContext& ctx) {
  if (ctx.repo.readme.empty()) return true;
  const RefIndex& refs = ctx.lease.refs();
  for (const std::string& entry : ctx.repo.readme) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) return false;
    const std::string ref = colon > 0                   ? entry.substr(0, colon)
                            : !ctx.route.head.empty()   ? ctx.route.head
                            : !refs.head_branch().empty() ? refs.head_branch()
                                                          : std::string("HEAD");
    if (!refs.Branch(ref)) return false;
  }
  return true;
}

}  // namespace

void WriteHeadLinks(Writer& out, const Chrome& chrome) {
  out.Raw("<meta name='generator' content='shellac " SHELLAC_VERSION "'/>\n");
  if (!chrome.robots.empty())
    out.Raw("<meta name='robots' content='").Raw(chrome.robots).Raw("'/>\n");
  out.Raw("<link rel='stylesheet' type='text/css' href='").Text(chrome.css).Raw("'/>\n");
  out.Raw("<link rel='shortcut icon' href='").Text(chrome.favicon).Raw("'/>\n");
}

namespace {

// PageStart's runs that depend on the repository, its refs and the branch shown alone.
ChromeMemo::Parts MakeParts(const PageContext& page_ctx, const std::string& current) {
  ChromeMemo::Parts parts;
  {
    Writer out(&parts.head);
    const PageContext ctx{page_ctx.site, page_ctx.chrome, page_ctx.route, page_ctx.repo,
                          page_ctx.lease, out};
    WriteHeadLinks(out, ctx.chrome);
    for (const std::string& url : CloneUrls(ctx)) {
      out.Raw("<link rel='vcs-git' href='");
      WriteUrlAttribute(out, url);
      out.Raw("' title='").Text(ctx.repo.name).Raw(" Git repository'/>\n");
    }
    out.Raw("</head>\n<body>\n");
    out.Raw("<div id='cgit'><table id='header'>\n<tr>\n<td class='logo' rowspan='2'><a href='")
        .Text(ctx.chrome.virtual_root)
        .Raw("'><img src='")
        .Text(ctx.chrome.logo)
        .Raw("' alt='cgit logo'/></a></td>\n");
    out.Raw("<td class='main'><a href='")
        .Text(ctx.chrome.virtual_root)
        .Raw("'>index</a> : <a href='");
    RepoUrl(ctx, "", "", {});
    out.Raw("'>").Text(ctx.repo.name).Raw("</a></td><td class='form'><form method='get'>\n");
  }
  {
    Writer out(&parts.url_start);
    out.Text(page_ctx.chrome.virtual_root).UrlPart(page_ctx.repo.url, /*keep_slash=*/true).Raw("/");
  }
  {
    Writer out(&parts.branches);
    out.Raw("<select name='h' onchange='this.form.submit();'>\n");
    for (const auto& branch : page_ctx.lease.refs().branches()) {
      out.Raw("<option value='").Text(branch).Raw("'");
      if (branch == current) out.Raw(" selected='selected'");
      out.Raw(">").Text(branch).Raw("</option>\n");
    }
    out.Raw("</select> <input type='submit' value='switch'/></form></td></tr>\n");
    out.Raw("<tr><td class='sub'>")
        .Text(page_ctx.repo.desc.empty() ? std::string_view("[no description]")
                                         : std::string_view(page_ctx.repo.desc))
        .Raw("</td><td class='sub right'>")
        .Text(page_ctx.repo.owner)
        .Raw("</td></tr></table>\n");
    out.Raw("<table class='tabs'><tr><td>\n");
  }
  if (ReadmeFixedByRefs(page_ctx))
    parts.about = !page_ctx.repo.readme.empty() && ChooseReadme(page_ctx).has_value();
  return parts;
}

}  // namespace

std::shared_ptr<const ChromeMemo::Parts> ChromeMemo::For(const PageContext& ctx) {
  const RefIndex& refs = ctx.lease.refs();
  const std::string& current = ctx.route.head.empty() ? refs.head_branch() : ctx.route.head;
  const uint64_t generation = refs.generation();
  const uint64_t repo = ctx.route.repo;
  std::string key(reinterpret_cast<const char*>(&repo), sizeof repo);
  key.append(reinterpret_cast<const char*>(&generation), sizeof generation);
  // A name that is no branch (a tag page's h=, a commit's id) selects none: every such name has
  // the same parts (an about tab that would depend on it is asked per page: ReadmeFixedByRefs).
  if (refs.Branch(current))
    key += current;
  else
    key += '\0';  // in no ref name
  if (std::optional<std::shared_ptr<const Parts>> known = memo_.Find(key)) return std::move(*known);
  auto parts = std::make_shared<const Parts>(MakeParts(ctx, current));
  made_.fetch_add(1, std::memory_order_relaxed);
  memo_.Add(key, parts);
  return parts;
}

uint64_t ChromeMemo::made() const { return made_.load(std::memory_order_relaxed); }

void PageStart(const PageContext& ctx, std::string_view title, std::string_view active_tab,
               std::string_view id) {
  Writer& out = ctx.out;
  const Route& r = ctx.route;
  const std::shared_ptr<const ChromeMemo::Parts> parts = ctx.chrome.memo.For(ctx);
  out.Raw("<!DOCTYPE html>\n<html lang='en'>\n<head>\n<title>").Text(title).Raw("</title>\n");
  out.BeginShared();  // up to the id: the same on every page of this repository
  out.Raw(parts->head);
  out.EndShared();
  if (!id.empty()) out.Raw("<input type='hidden' name='id' value='").Text(id).Raw("'/>");
  out.BeginShared();  // the branch list: the same for this repository and branch
  out.Raw(parts->branches);
  out.EndShared();

  // Tabs. The commit and diff tabs keep the diff options, as cgit's do. Their links differ only
  // in page, path and query: the repository's URL (in the parts), the path and each query are
  // escaped once, as RepoUrl would write them.
  const std::string context = r.diff.context != 3 ? std::to_string(r.diff.context) : "";
  const std::string_view ignorews = r.diff.ignorews ? "1" : "";
  const std::string dt = r.diff.dt != 0 ? std::to_string(r.diff.dt) : "";
  std::string path;
  AppendUrlEncoded(&path, r.path, /*keep_slash=*/true);
  const std::string head_query = QueryText({{"h", r.head}});
  const std::string id_query = QueryText({{"h", r.head}, {"id", id}});
  auto link = [&](std::string_view page, std::string_view escaped_path, std::string_view query) {
    out.Raw(parts->url_start);
    if (!page.empty()) out.Raw(page).Raw("/");
    out.Raw(escaped_path).Raw(query);
  };
  // Tabs of pages about a path keep it (cgit's path-limited commit/diff/log/tree links).
  auto tab = [&](std::string_view name, std::string_view page, bool keeps_path,
                 std::string_view query) {
    out.Raw("<a");
    if (name == active_tab) out.Raw(" class='active'");
    out.Raw(" href='");
    link(page, keeps_path ? std::string_view(path) : std::string_view(), query);
    out.Raw("'>").Raw(name).Raw("</a>");
  };
  const bool about = parts->about ? *parts->about
                                   : !ctx.repo.readme.empty() && ChooseReadme(ctx).has_value();
  if (about) tab("about", "about", false, head_query);
  tab("summary", "", false, head_query);
  tab("refs", "refs", false, id_query);
  const std::string_view follow = r.follow ? "1" : "";
  tab("log", "log", true,
      QueryText({{"h", r.head}, {"showmsg", r.showmsg ? "1" : ""}, {"follow", follow}}));
  // On the blame page its own tab stands where the tree's does, as cgit's.
  if (active_tab == "blame")
    tab("blame", "blame", true, id_query);
  else
    tab("tree", "tree", true, id_query);
  tab("commit", "commit", true,
      QueryText({{"h", r.head},
                 {"id", id},
                 {"context", context},
                 {"ignorews", ignorews},
                 {"dt", dt},
                 {"follow", follow}}));
  tab("diff", "diff", true,
      QueryText({{"h", r.head},
                 {"id", id},
                 {"id2", r.id2},
                 {"context", context},
                 {"ignorews", ignorews},
                 {"dt", dt},
                 {"follow", follow}}));
  // cgit shows the stats tab when max-stats enables a period.
  if (ctx.repo.max_stats > 0) tab("stats", "stats", true, head_query);
  if (!ctx.repo.homepage.empty()) out.Raw("<a href='").Text(ctx.repo.homepage).Raw("'>homepage</a>");
  out.Raw("</td><td class='form'><form class='right' method='get' action='");
  link("log", path, "");
  out.Raw("'>\n");
  if (!r.head.empty()) out.Raw("<input type='hidden' name='h' value='").Text(r.head).Raw("'/>");
  if (!id.empty()) out.Raw("<input type='hidden' name='id' value='").Text(id).Raw("'/>");
  if (r.showmsg) out.Raw("<input type='hidden' name='showmsg' value='1'/>");
  if (!r.grep && !r.search) {
    out.BeginShared();
    out.Raw(
        "<select name='qt'>\n<option value='grep'>log msg</option>\n<option "
        "value='author'>author</option>\n"
        "<option value='committer'>committer</option>\n<option "
        "value='range'>range</option>\n</select>\n"
        "<input class='txt' type='search' size='10' name='q' value=''/>\n"
        "<input type='submit' value='search'/>\n</form>\n</td></tr></table>\n");
    out.EndShared();
  } else {
    // A search's page: its kind selected and its pattern in the field, as cgit's.
    out.Raw("<select name='qt'>\n");
    for (const auto& [value, label] : {std::pair<std::string_view, std::string_view>{"grep", "log msg"},
                                       {"author", "author"},
                                       {"committer", "committer"},
                                       {"range", "range"}}) {
      out.Raw("<option value='").Raw(value).Raw("'");
      if (r.grep && *r.grep == value) out.Raw(" selected='selected'");
      out.Raw(">").Raw(label).Raw("</option>\n");
    }
    out.Raw("</select>\n<input class='txt' type='search' size='10' name='q' value='")
        .Text(r.search ? std::string_view(*r.search) : std::string_view())
        .Raw("'/>\n<input type='submit' value='search'/>\n</form>\n</td></tr></table>\n");
  }
  if (!r.path.empty()) {
    // Breadcrumbs: each leading part of the path links to this page limited to it.
    // On the log, each links to the log with the page's query (search, offset, showmsg), as
    // cgit's.
    // `escaped` is `prefix` as the escaped path has it (escaping keeps '/', so the same count of
    // segments).
    auto crumb = [&](std::string_view prefix, std::string_view escaped) {
      if (active_tab == "log")
        LogUrl(ctx, prefix, r.ofs, r.showmsg, r.follow);
      else
        link(active_tab, escaped, id_query);
    };
    out.Raw("<div class='path'>path: <a href='");
    crumb("", "");
    out.Raw("'>root</a>");
    for (size_t end = 0, escaped_end = 0; end != std::string::npos;) {
      end = r.path.find('/', end + 1);
      escaped_end = path.find('/', escaped_end + 1);
      const std::string_view prefix = std::string_view(r.path).substr(0, end);
      const size_t start = prefix.rfind('/');
      out.Raw("/<a href='");
      crumb(prefix, std::string_view(path).substr(0, escaped_end));
      out.Raw("'>")
          .Text(prefix.substr(start == std::string_view::npos ? 0 : start + 1))
          .Raw("</a>");
    }
    // With enable-follow-links, the log's path offers the page with follow= turned over.
    if (active_tab == "log" && ctx.repo.enable_follow_links) {
      out.Raw(" (<a href='");
      LogUrl(ctx, r.path, r.ofs, r.showmsg, !r.follow);
      out.Raw(r.follow ? "'>unfollow</a>)" : "'>follow</a>)");
    }
    out.Raw("</div>");
  }
  out.Raw("<div class='content'>");
}

namespace {

// The blob at `path` in `object`'s tree, when `object` is a commit (as cgit asks: an annotated
// tag is not) whose tree has a blob there.
std::optional<git_oid> CommitBlob(git_object* object, const std::string& path) {
  if (git_object_type(object) != GIT_OBJECT_COMMIT) return std::nullopt;
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, reinterpret_cast<git_commit*>(object)) != 0) return std::nullopt;
  const TreePtr tree(raw_tree);
  git_tree_entry* raw_entry = nullptr;
  if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) != 0) return std::nullopt;
  const base::Owned<git_tree_entry_free> entry(raw_entry);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  return *git_tree_entry_id(entry.get());
}

// CommitBlob's answer for the commit `tip` without libgit2's parse of the commit or its root
// tree: the tree's id from the commit-graph (GraphTree), the path's entry from raw trees
// (RawObjects). None when the graph does not give the tree or a tree cannot be read: the caller
// asks libgit2.
std::optional<std::optional<git_oid>> GraphCommitBlob(git_repository* repo, const git_oid& tip,
                                                      const std::string& path) {
  const std::optional<git_oid> root = GraphTree(repo, tip);
  if (!root) return std::nullopt;
  RawObjects objects(repo);
  const TreeEntry entry = objects.PathEntry(*root, path);
  if (objects.incomplete()) return std::nullopt;
  // A blob as git_tree_entry_type tells it: neither a folder nor a submodule.
  const uint32_t kind = entry.mode & 0170000;
  if (!entry.present || kind == 0040000 || kind == 0160000) return std::optional<git_oid>();
  return std::optional<git_oid>(entry.id);
}

// CommitBlob's answers for branch tips: a commit id fixes its tree, so an answer holds in every
// repository (every fork) and needs no invalidation (a branch that moves asks for its new tip).
// Keyed by the tip's raw id and the path.
constexpr size_t kReadmeGeneration = 4096;

SharedMemo<std::string, std::optional<git_oid>>& ReadmeMemo() {
  static SharedMemo<std::string, std::optional<git_oid>> memo(kReadmeGeneration);
  return memo;
}

std::string ReadmeKey(const git_oid& commit, const std::string& path) {
  return std::string(reinterpret_cast<const char*>(commit.id), GIT_OID_RAWSZ) + path;
}

// The ref named `name` ("refs/tags/v1.0") in the index, or null.
const RefIndex::Ref* FindRef(const RefIndex& refs, std::string_view name) {
  const std::vector<RefIndex::Ref>& all = refs.refs();
  const auto it = std::lower_bound(all.begin(), all.end(), name,
                                   [](const RefIndex::Ref& ref, std::string_view n) { return ref.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}

// Whether `refs` has a ref of this full name.
bool HasRef(const RefIndex& refs, std::string_view name) {
  return FindRef(refs, name) != nullptr;
}

// The object tag `name` (a short name) finally points at, when git would resolve `name` to that
// tag (refs/tags/NAME in the ref index, no $GIT_DIR/NAME or refs/NAME before it in git's order)
// and packed-refs recorded what it peels to; else none.
std::optional<git_oid> TagTarget(const PageContext& ctx, const std::string& name) {
  if (name.empty() || IsFullSha(name)) return std::nullopt;
  const RefIndex::Ref* tag = FindRef(ctx.lease.refs(), "refs/tags/" + name);
  if (tag == nullptr || !tag->peel_known) return std::nullopt;
  if (HasRef(ctx.lease.refs(), "refs/" + name) ||
      ::access((std::string(git_repository_path(ctx.lease.repo())) + name).c_str(), F_OK) == 0)
    return std::nullopt;
  return tag->peeled ? *tag->peeled : tag->id;
}

}  // namespace

std::optional<git_oid> GraphTree(git_repository* repo, const git_oid& commit) {
  const std::shared_ptr<const CommitGraph> graph = CommitGraph::ForRepository(repo);
  if (!graph) return std::nullopt;
  const uint32_t pos = graph->Find(commit);
  git_odb* raw_odb = nullptr;
  if (pos == CommitGraph::kNoPosition || git_repository_odb(&raw_odb, repo) != 0)
    return std::nullopt;
  const OdbPtr odb(raw_odb);
  if (!git_odb_exists(odb.get(), &commit)) return std::nullopt;
  return graph->Tree(pos);
}

std::optional<git_oid> BranchTip(const PageContext& ctx, const std::string& name) {
  const RefIndex& refs = ctx.lease.refs();
  if (name.empty() || IsFullSha(name)) return std::nullopt;
  std::optional<git_oid> tip = refs.Branch(name);
  // git's order for a name: $GIT_DIR/NAME, refs/NAME, refs/tags/NAME, then refs/heads/NAME.
  if (!tip || HasRef(refs, "refs/" + name) || HasRef(refs, "refs/tags/" + name) ||
      ::access((std::string(git_repository_path(ctx.lease.repo())) + name).c_str(), F_OK) == 0)
    return std::nullopt;
  return tip;
}

std::optional<git_oid> WalkStart(const PageContext& ctx, const std::string& tip, int* status,
                                 std::string* reason) {
  // A branch, or (feeds of tags) a tag, whose commit the ref index knows.
  std::optional<git_oid> start = BranchTip(ctx, tip);
  if (!start) start = TagTarget(ctx, tip);
  if (start) {
    const PackedReadsScope packed_reads;
    git_odb* raw_odb = nullptr;
    size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    if (git_repository_odb(&raw_odb, ctx.lease.repo()) == 0) {
      const OdbPtr odb(raw_odb);
      if (git_odb_read_header(&size, &type, odb.get(), &*start) == 0 && type == GIT_OBJECT_COMMIT)
        return start;
    }
  }
  const CommitPtr commit =
      ResolveCommit(ctx.lease.repo(), "", tip.empty() ? "HEAD" : tip, status, reason);
  if (!commit) return std::nullopt;
  return *git_commit_id(commit.get());
}

bool NamesObject(git_repository* repo, const std::string& name) {
  int status = 0;
  std::string reason;
  return !name.empty() && ResolveObject(repo, name, &status, &reason) != nullptr;
}

std::optional<Readme> ChooseReadme(const PageContext& ctx) {
  for (const std::string& entry : ctx.repo.readme) {
    const size_t colon = entry.find(':');
    Readme readme;
    if (colon == std::string::npos) {
      readme.name = entry;
      readme.file = entry.starts_with('/') ? entry : ctx.repo.path + "/" + entry;
      if (::access(readme.file.c_str(), R_OK) == 0) return readme;
      continue;
    }
    readme.in_repo = true;
    readme.name = readme.file = entry.substr(colon + 1);
    readme.ref = entry.substr(0, colon);
    if (readme.ref.empty()) {
      readme.ref = !ctx.route.head.empty()                    ? ctx.route.head
                   : !ctx.lease.refs().head_branch().empty() ? ctx.lease.refs().head_branch()
                                                             : "HEAD";
    }
    // Names only: no revision syntax that walks history per request.
    if (readme.ref.find_first_of("~^:?*[\\ ") != std::string::npos ||
        readme.ref.find("@{") != std::string::npos || readme.ref.find("..") != std::string::npos ||
        readme.file.empty() || BadPath(readme.file))
      continue;
    // Every page of a repository with a readme asks (for its about tab): a branch is found in
    // the ref index, without the file lookups of git_revparse_single, and the answer for its tip
    // is remembered (below).
    const std::optional<git_oid> tip = ctx.lease.refs().Branch(readme.ref);
    // The page reads the file by the blob found here, unless `ref:file` could name another
    // revision (git prefers refs/NAME and a tag of the branch's name to the branch).
    const bool blob_is_read = tip && BranchTip(ctx, readme.ref);
    if (tip) {
      if (const auto known = ReadmeMemo().Find(ReadmeKey(*tip, readme.file))) {
        if (!*known) continue;
        if (blob_is_read) readme.blob = **known;
        return readme;
      }
    }
    if (tip) {
      if (const std::optional<std::optional<git_oid>> found =
              GraphCommitBlob(ctx.lease.repo(), *tip, readme.file)) {
        ReadmeMemo().Add(ReadmeKey(*tip, readme.file), *found);
        if (!*found) continue;
        if (blob_is_read) readme.blob = **found;
        return readme;
      }
    }
    const PackedReadsScope packed_reads;  // the commit and its trees inflated by the pack reader
    git_object* raw = nullptr;
    if (tip ? git_object_lookup(&raw, ctx.lease.repo(), &*tip, GIT_OBJECT_ANY) != 0
            : git_revparse_single(&raw, ctx.lease.repo(), readme.ref.c_str()) != 0)
      continue;
    const ObjectPtr object(raw);
    const std::optional<git_oid> blob = CommitBlob(raw, readme.file);
    if (tip) ReadmeMemo().Add(ReadmeKey(*tip, readme.file), blob);
    if (!blob) continue;
    if (blob_is_read) readme.blob = *blob;
    return readme;
  }
  return std::nullopt;
}

namespace {

// Replaces cgit's macros ($CGIT_REPO_URL, $CGIT_REPO_NAME, ...) in a clone-url.
std::string ExpandMacros(std::string_view text, const conf::Config::Repository& repo) {
  const std::pair<std::string_view, const std::string*> macros[] = {
      {"CGIT_REPO_URL", &repo.url},     {"CGIT_REPO_NAME", &repo.name},
      {"CGIT_REPO_DESC", &repo.desc},   {"CGIT_REPO_OWNER", &repo.owner},
      {"CGIT_REPO_SECTION", &repo.section},
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    size_t end = i + 1;
    while (text[i] == '$' && end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    if (text[i] != '$' || end == i + 1) {
      out += text[i];
      continue;
    }
    const std::string_view name = text.substr(i + 1, end - i - 1);
    for (const auto& [macro, value] : macros)
      if (name == macro) out += *value;
    i = end - 1;
  }
  return out;
}

}  // namespace

namespace {

// The bytes cgit's URL escapes turn into "%xx": controls, blank, non-ASCII, DEL and `more`.
constexpr ByteSet UrlEscapedBytes(std::string_view more) {
  ByteSet escaped{};
  for (int c = 0; c < 256; ++c) escaped[c] = c <= 0x20 || c >= 0x7f;
  for (const char c : more) escaped[static_cast<unsigned char>(c)] = true;
  return escaped;
}

// `byte` as "%xx" (lower-case hex, as cgit writes it).
std::array<char, 3> Percent(char byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto c = static_cast<unsigned char>(byte);
  return {'%', kHex[c >> 4], kHex[c & 15]};
}

}  // namespace

// A URL for an href as cgit's html_url_path writes it: bytes a URL cannot hold escaped.
void WriteUrlAttribute(Writer& out, std::string_view url) {
  // The bytes percent-escaped and '&', the only byte left as it is that needs an entity in an
  // attribute (the others HTML escapes are percent-escaped): runs of the rest go in one copy.
  static constexpr ByteSet kSpecial = UrlEscapedBytes("\"#%'<>\\^`{|}&");
  EscapeRuns(
      url, [](const char* p, const char* end) { return FindInSet(p, end, kSpecial); },
      [&out](std::string_view run) { out.Raw(run); },
      [&out](char byte) {
        if (byte == '&') {
          out.Raw("&amp;");
        } else {
          const std::array<char, 3> escape = Percent(byte);
          out.Raw(std::string_view(escape.data(), escape.size()));
        }
      });
}

std::string UrlPath(std::string_view url) {
  static constexpr ByteSet kEscaped = UrlEscapedBytes("\"#%'<=>?\\^`{|}");
  std::string out;
  out.reserve(url.size());
  EscapeRuns(
      url, [](const char* p, const char* end) { return FindInSet(p, end, kEscaped); },
      [&out](std::string_view run) { out.append(run); },
      [&out](char byte) {
        const std::array<char, 3> escape = Percent(byte);
        out.append(escape.data(), escape.size());
      });
  return out;
}

std::vector<std::string> CloneUrls(const PageContext& ctx) {
  // A repository's clone-url (with macros), else one "PREFIX/URL" per clone-prefix word.
  const bool own = !ctx.repo.clone_url.empty();
  const std::string urls = own ? ExpandMacros(ctx.repo.clone_url, ctx.repo) : ctx.site.summary().clone_prefix;
  std::vector<std::string> out;
  std::string_view rest = urls;
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = rest.find(' ');
    out.emplace_back(rest.substr(0, end));
    if (!own) out.back() += "/" + ctx.repo.url;
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  return out;
}

Route LinkRoute(const PageContext& ctx) {
  Route r = ctx.route;
  const std::string& default_branch = ctx.lease.refs().head_branch();
  if (r.head == default_branch) r.head.clear();
  if (r.id == (r.head.empty() ? default_branch : r.head)) r.id.clear();
  return r;
}

void PageEnd(Writer& out) {
  out.BeginShared();
  out.Raw("</div> <!-- class=content -->\n<div class='footer'>generated by shellac " SHELLAC_VERSION
          "</div>\n</div> <!-- id=cgit -->\n</body>\n</html>\n");
  out.EndShared();
}

namespace {

// Converts with iconv; false when the encoding is unknown or the bytes do not fit it.
bool Iconv(std::string_view in, const char* from, std::string* out) {
  iconv_t cd = iconv_open("UTF-8", from);
  if (cd == reinterpret_cast<iconv_t>(-1)) return false;
  std::string result(in.size() * 4 + 16, '\0');
  char* src = const_cast<char*>(in.data());
  size_t src_left = in.size();
  char* dst = result.data();
  size_t dst_left = result.size();
  const size_t rc = iconv(cd, &src, &src_left, &dst, &dst_left);
  iconv_close(cd);
  if (rc == static_cast<size_t>(-1)) return false;
  result.resize(result.size() - dst_left);
  *out = std::move(result);
  return true;
}

}  // namespace

std::string ToUtf8(std::string_view bytes, const char* encoding) {
  // As cgit: converted only when the commit names an encoding other than UTF-8; without one the
  // bytes are shown as they are, valid UTF-8 or not.
  std::string out;
  if (encoding != nullptr && *encoding != '\0' && !base::EqualsIgnoreCase(encoding, "UTF-8") &&
      Iconv(bytes, encoding, &out))
    return out;
  return std::string(bytes);
}

namespace {
void Broken(const git_time& when, struct tm* tm) {
  const time_t local = static_cast<time_t>(when.time + static_cast<int64_t>(when.offset) * 60);
  gmtime_r(&local, tm);
}
void Offset(const git_time& when, char* buf, size_t size) {
  const int off = when.offset < 0 ? -when.offset : when.offset;
  std::snprintf(buf, size, "%c%02d%02d", when.offset < 0 ? '-' : '+', off / 60, off % 60);
}
}  // namespace

std::string FormatDate(const git_time& when) {
  struct tm tm;
  Broken(when, &tm);
  char date[64], off[16];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
  Offset(when, off, sizeof off);
  return std::string(date) + " " + off;
}

std::string FormatMailDate(const git_time& when) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm tm;
  Broken(when, &tm);
  char off[16], date[80];
  Offset(when, off, sizeof off);
  std::snprintf(date, sizeof date, "%s, %d %s %d %02d:%02d:%02d %s", kDays[tm.tm_wday], tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec, off);
  return date;
}

void SplitMessage(std::string_view message, std::string_view* subject, std::string_view* body) {
  while (message.starts_with('\n')) message.remove_prefix(1);
  const size_t eol = message.find('\n');
  *subject = message.substr(0, eol);
  std::string_view rest =
      eol == std::string_view::npos ? std::string_view() : message.substr(eol + 1);
  while (rest.starts_with('\n')) rest.remove_prefix(1);
  *body = rest;
}

const char* ModeString(uint32_t mode) {
  // cgit's cgit_print_filemode of git's canonical mode: a symlink's and a submodule's permission
  // bits are all clear.
  switch (mode & 0170000) {
    case 0040000:
      return "d---------";
    case 0120000:
      return "l---------";
    case 0160000:
      return "m---------";
    default:
      return (mode & 0111) ? "-rwxr-xr-x" : "-rw-r--r--";
  }
}

namespace {
thread_local int64_t age_horizon = 0;  // see AgeHorizon

void LimitAgeHorizon(int64_t instant) {
  if (age_horizon == 0 || instant < age_horizon) age_horizon = instant;
}
}  // namespace

void ResetAgeHorizon() {
  age_horizon = 0;
}
int64_t AgeHorizon() {
  return age_horizon;
}

void WriteAge(Writer& out, const git_time& when, int64_t now, int64_t max_relative) {
  // cgit's units: a month is a twelfth of a 365-day year (30.4 days), not 30 days.
  constexpr double kMin = 60, kHour = 3600, kDay = 86400, kWeek = 7 * kDay, kYear = 365 * kDay,
                   kMonth = kYear / 12.0;
  int64_t secs = now - when.time;
  if (secs < 0) secs = 0;
  if (max_relative >= 0 && secs > max_relative) {
    struct tm tm;
    Broken(when, &tm);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
    out.Raw("<span title='").Text(FormatDate(when)).Raw("'>").Raw(date).Raw("</span>");
    return;
  }
  const char* cls;
  const char* unit;
  double per;
  if (secs < 2 * kHour)
    cls = "age-mins", unit = " min.", per = kMin;
  else if (secs < 2 * kDay)
    cls = "age-hours", unit = " hours", per = kHour;
  else if (secs < 2 * kWeek)
    cls = "age-days", unit = " days", per = kDay;
  else if (secs < 2 * kMonth)
    cls = "age-weeks", unit = " weeks", per = kWeek;
  else if (secs < 2 * kYear)
    cls = "age-months", unit = " months", per = kMonth;
  else
    cls = "age-years", unit = " years", per = kYear;
  char text[48];
  const double shown = std::nearbyint(static_cast<double>(secs) / per);
  std::snprintf(text, sizeof text, "%.0f%s", static_cast<double>(secs) / per, unit);
  // The text holds while secs / per stays below shown + 1/2 (at the half it may round up), the
  // unit while secs stays below the next unit's start, the relative form up to max_relative.
  // Rounded down to whole seconds: a page kept until then never shows an age that moved on.
  int64_t changes = when.time + static_cast<int64_t>(std::floor((shown + 0.5) * per));
  for (const double start : {2 * kHour, 2 * kDay, 2 * kWeek, 2 * kMonth, 2 * kYear}) {
    if (static_cast<double>(secs) < start) {
      changes = std::min(changes, when.time + static_cast<int64_t>(std::floor(start)));
      break;
    }
  }
  if (max_relative >= 0) changes = std::min(changes, when.time + max_relative + 1);
  LimitAgeHorizon(changes);
  out.Raw("<span class='")
      .Raw(cls)
      .Raw("' title='")
      .Text(FormatDate(when))
      .Raw("'>")
      .Raw(text)
      .Raw("</span>");
}

std::string OidHex(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

bool IsFullSha(std::string_view s) {
  if (s.size() != GIT_OID_HEXSZ) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool ResolveCommits(git_repository* repo, const Route& route, CommitPtr* commit, CommitPtr* other,
                    Page* error) {
  int status = 200;
  std::string reason;
  *commit = ResolveCommit(repo, route.id, route.head, &status, &reason);
  if (*commit && !route.id2.empty()) *other = ResolveCommit(repo, route.id2, "", &status, &reason);
  if (*commit && (route.id2.empty() || *other)) return true;
  *error = ErrorPage(status, reason);
  return false;
}

std::string_view BlobText(const git_blob* blob) {
  return {static_cast<const char*>(git_blob_rawcontent(blob)),
          static_cast<size_t>(git_blob_rawsize(blob))};
}

std::optional<std::string_view> FileDiff::OldText() const {
  if (old_bytes) return old_bytes.view();
  if (old_blob != nullptr) return BlobText(old_blob.get());
  return std::nullopt;
}

size_t HunkHeaders::LineStart(long line) {
  while (cursor_line_ < line && cursor_pos_ < text_.size()) {
    const size_t eol = text_.find('\n', cursor_pos_);
    cursor_pos_ = eol == std::string_view::npos ? text_.size() : eol + 1;
    ++cursor_line_;
  }
  return cursor_line_ == line && cursor_pos_ < text_.size() ? cursor_pos_ : std::string_view::npos;
}

const std::string& HunkHeaders::Next(const git_diff_hunk& hunk) {
  // "@@ -a,b +c,d @@" as xdiff wrote it, without libgit2's function part.
  const std::string_view raw(hunk.header, hunk.header_len);
  const size_t close = raw.find("@@", 2);
  header_.assign(raw.substr(0, close == std::string_view::npos ? raw.size() : close + 2));
  // xdiff's s1: the hunk's first old line, 0-based (the header shows s1 + 1, or s1 when the hunk
  // has no old lines).
  const long start = hunk.old_lines == 0 ? hunk.old_start : hunk.old_start - 1;
  const long from = start - 1;
  if (from > previous_start_ && !loaded_) {
    loaded_ = true;
    git_blob* raw_blob = nullptr;
    if (given_) {
      text_ = *given_;
    } else if (!git_oid_is_zero(&delta_.old_file.id) &&
               git_blob_lookup(&raw_blob, repo_, &delta_.old_file.id) == 0) {
      old_blob_.reset(raw_blob);
      text_ = BlobText(raw_blob);
    }
  }
  if (from > previous_start_ && !text_.empty()) {
    // Where the line that ends just before byte `p` starts.
    auto line_before = [this](size_t p) {
      const size_t nl = p >= 2 ? text_.rfind('\n', p - 2) : std::string_view::npos;
      return nl == std::string_view::npos ? size_t{0} : nl + 1;
    };
    // The search starts at line `from`, or at the last line when the text is shorter.
    long l = from;
    size_t pos = LineStart(from);
    if (pos == std::string_view::npos) {
      l = cursor_line_ - 1;  // the cursor is past the last line: cursor_line_ is the line count
      pos = line_before(text_.size());
    }
    for (; l > previous_start_ && l >= 0; --l) {
      const size_t eol = text_.find('\n', pos);
      std::string_view line =
          text_.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol + 1 - pos);
      if (pos > 0) pos = line_before(pos);
      const unsigned char c = static_cast<unsigned char>(line[0]);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$')) continue;
      line = line.substr(0, 80);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' ||
                               line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
      function_.assign(line);
      break;
    }
  }
  previous_start_ = from;
  if (!function_.empty()) header_.append(" ").append(function_);
  return header_;
}

DiffOptions EffectiveDiffOptions(const PageContext& ctx) {
  DiffOptions options = ctx.route.diff;
  if (options.abbrev == 0) options.abbrev = ctx.lease.abbrev();
  return options;
}

ObjectPtr ResolveObject(git_repository* repo, const std::string& spec, int* status,
                        std::string* reason) {
  // Only object ids and ref names are accepted. Revision syntax (HEAD~3, v1^{}, :/text, @{...})
  // is refused: ":/text" searches all history and "~100000" walks it, per request. Every byte
  // refused here is one git never allows in a ref name, so no branch or tag becomes unreachable.
  for (unsigned char c : spec) {
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' ||
        c == '*' || c == '[' || c == '\\') {
      *status = 404;
      *reason = "malformed id '" + spec + "'";
      return nullptr;
    }
  }
  if (spec.empty() || spec.find("@{") != std::string::npos ||
      spec.find("..") != std::string::npos) {
    *status = 404;
    *reason = "malformed id '" + spec + "'";
    return nullptr;
  }
  if (spec.size() > 256) {
    *status = 404;
    *reason = "malformed id (too long)";
    return nullptr;
  }
  // The object (and a tag's chain) inflated by the pack reader: outside a scope libgit2's own
  // packed backend read it with zlib and none of the reader's delta bases (a cold diff page's
  // commit was ~40 K instructions of zlib there).
  const PackedReadsScope packed_reads;
  git_object* raw = nullptr;
  const int rc = git_revparse_single(&raw, repo, spec.c_str());
  if (rc == GIT_EAMBIGUOUS) {
    *status = 400;
    *reason = "ambiguous id '" + spec + "'";
    return nullptr;
  }
  if (rc != 0) {
    *status = 404;
    *reason = (rc == GIT_EINVALIDSPEC ? "malformed id '" : "unknown id '") + spec + "'";
    return nullptr;
  }
  return ObjectPtr(raw);
}

CommitPtr ResolveCommit(git_repository* repo, std::string_view id, std::string_view head,
                        int* status, std::string* reason) {
  std::string spec(id);
  // h= is any revision, as in cgit: a branch, a tag, a full or short id.
  if (spec.empty()) spec = head.empty() ? "HEAD" : std::string(head);
  const PackedReadsScope packed_reads;  // the peel's reads too (ResolveObject)
  ObjectPtr object = ResolveObject(repo, spec, status, reason);
  if (!object) return nullptr;
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) != 0) {
    *status = 404;
    *reason = "'" + spec + "' is not a commit";
    return nullptr;
  }
  return CommitPtr(reinterpret_cast<git_commit*>(peeled));
}

std::string QuotedFilename(std::string_view name) {
  std::string quoted;
  for (char c : name) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';  // no header injection
    quoted += c;
  }
  return quoted;
}

namespace {

// The trees a commit's diff compares: `commit`'s and `other`'s, or its first parent's, or none
// (the empty tree) for a root commit.
bool CommitTrees(git_repository* repo, git_commit* commit, git_commit* other, TreePtr* old_tree,
                 TreePtr* new_tree, std::string* reason) {
  (void)repo;
  auto fail = [&](const char* what) {
    const git_error* e = git_error_last();
    *reason = std::string(what) + ": " + (e ? e->message : "unknown error");
    return false;
  };
  git_tree* raw_new = nullptr;
  if (git_commit_tree(&raw_new, commit) != 0) return fail("cannot read the commit's tree");
  new_tree->reset(raw_new);
  CommitPtr parent;
  if (other == nullptr && git_commit_parentcount(commit) > 0) {
    git_commit* raw_parent = nullptr;
    if (git_commit_parent(&raw_parent, commit, 0) != 0) return fail("cannot read the parent");
    parent.reset(raw_parent);
    other = raw_parent;
  }
  if (other != nullptr) {
    git_tree* raw_old = nullptr;
    if (git_commit_tree(&raw_old, other) != 0) return fail("cannot read the parent's tree");
    old_tree->reset(raw_old);
  }
  return true;
}

git_diff_options EngineOptions(const DiffOptions& options, DiffEngine engine) {
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  opts.context_lines = static_cast<uint32_t>(options.context);
  // git's diff machinery slides ambiguous hunks with the indent heuristic by default; cgit's own
  // xdiff call asks for a minimal diff and no heuristic.
  opts.flags |= engine == DiffEngine::kCgitPages ? GIT_DIFF_MINIMAL : GIT_DIFF_INDENT_HEURISTIC;
  if (options.ignorews) opts.flags |= GIT_DIFF_IGNORE_WHITESPACE;
  return opts;
}

// libgit2's generic diff of two trees, limited to `path` (if any), with libgit2's rename
// detection when `libgit2_renames` (only the tests' reference path, FileDiffPath::kLibgit2).
DiffPtr DiffOfTrees(git_repository* repo, git_tree* old_tree, git_tree* new_tree,
                    const DiffOptions& options, DiffEngine engine, std::string* reason,
                    std::string_view path, bool libgit2_renames) {
  auto fail = [&](const char* what) {
    const git_error* e = git_error_last();
    *reason = std::string(what) + ": " + (e ? e->message : "unknown error");
    return DiffPtr();
  };
  git_diff_options opts = EngineOptions(options, engine);
  // A kind change (file, symlink, submodule) is one changed file, as git's diff-tree has it.
  opts.flags |= GIT_DIFF_INCLUDE_TYPECHANGE;
  std::string path_copy(path);
  char* pathspec[] = {path_copy.data()};
  if (!path.empty()) {
    // A literal path (file or folder), not a glob: "a*b" names only the file called that.
    opts.pathspec.strings = pathspec;
    opts.pathspec.count = 1;
    opts.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
  }
  git_diff* raw_diff = nullptr;
  if (git_diff_tree_to_tree(&raw_diff, repo, old_tree, new_tree, &opts) != 0)
    return fail("cannot diff");
  DiffPtr diff(raw_diff);
  if (libgit2_renames && engine == DiffEngine::kCgitPages) {
    git_diff_find_options find = GIT_DIFF_FIND_OPTIONS_INIT;
    find.flags = GIT_DIFF_FIND_RENAMES;
    if (git_diff_find_similar(diff.get(), &find) != 0) return fail("rename detection failed");
  }
  return diff;
}

// The diff attribute of a file's path (git's defaults: patch and rawdiff read it), as libgit2 reads
// it; unspecified without a lookup when the repository has no attribute sources (`sources`:
// Registry::Lease::attributes, 0 then). False when the lookup fails.
bool DiffAttribute(git_repository* repo, uint64_t sources, const git_diff_delta& d,
                   git_attr_value_t* out) {
  *out = GIT_ATTR_VALUE_UNSPECIFIED;
  if (sources == 0) return true;
  const char* path = d.new_file.path != nullptr ? d.new_file.path : d.old_file.path;
  const char* value = nullptr;
  if (path != nullptr &&
      git_attr_get(&value, repo, GIT_ATTR_CHECK_FILE_THEN_INDEX, path, "diff") != 0)
    return false;
  *out = git_attr_value(value);
  return true;
}

// One file's patch from its blobs, as git_patch_from_diff makes it from a tree-to-tree delta: a
// submodule's side is the text "Subproject commit HEX\n" (as libgit2 shows a gitlink; a kind change
// has a file or symlink on its other side), a missing side (an added or deleted file) no data. Null
// when a blob cannot be read. The patch points into *texts (a submodule's text), which must outlive
// it. *old_blob gets the old side's blob, if read. For `engine` kGitDefaults (git's diff machinery:
// patch, rawdiff) libgit2 reads the diff attribute as git does (a bare repository's
// info/attributes: `-diff` and `binary` make a file binary, `diff` makes it text, `diff=NAME` takes
// diff.NAME.binary from the config); cgit's own xdiff call (kCgitPages) reads no attributes, only
// a NUL in the first 8000 bytes of either side makes the file binary. `attributes`: the
// repository's attribute sources (DiffAttribute).
PatchPtr BlobPatch(git_repository* repo, const git_diff_delta& d, git_diff_options opts,
                   DiffEngine engine, uint64_t attributes, std::deque<std::string>* texts,
                   BlobPtr* old_blob_out) {
  const bool old_side = !git_oid_is_zero(&d.old_file.id);
  const bool new_side = !git_oid_is_zero(&d.new_file.id);
  const bool old_link = old_side && d.old_file.mode == GIT_FILEMODE_COMMIT;
  const bool new_link = new_side && d.new_file.mode == GIT_FILEMODE_COMMIT;
  git_patch* raw = nullptr;
  BlobPtr old_blob, new_blob;
  git_blob* raw_blob = nullptr;
  if (old_side && !old_link) {
    if (git_blob_lookup(&raw_blob, repo, &d.old_file.id) != 0) return PatchPtr();
    old_blob.reset(raw_blob);
  }
  if (new_side && !new_link) {
    if (git_blob_lookup(&raw_blob, repo, &d.new_file.id) != 0) return PatchPtr();
    new_blob.reset(raw_blob);
  }
  // libgit2 looks the diff attribute of each side's path up (some 30 K instructions a lookup:
  // every attribute file's stamp, the path's folders; no path is "file" to it), and for an empty
  // path takes the auto driver, a NUL in a side's first 8000 bytes making it binary: the blobs'
  // diff below gets empty paths (the patch's own are never read). cgit's pages read no attribute
  // (binary is forced here); git's defaults read it once for the file here and force what it
  // says (diff set: text; unset, as `binary` does: binary); a driver's name (diff=NAME) goes to
  // libgit2 with the paths.
  const char* old_path = "";
  const char* new_path = "";
  if (engine == DiffEngine::kCgitPages) {
    auto binary = [](const BlobPtr& blob) {
      return blob != nullptr &&
             LooksBinary(std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                                          static_cast<size_t>(git_blob_rawsize(blob.get()))));
    };
    opts.flags |= binary(old_blob) || binary(new_blob) ? GIT_DIFF_FORCE_BINARY : GIT_DIFF_FORCE_TEXT;
  } else {
    git_attr_value_t value = GIT_ATTR_VALUE_UNSPECIFIED;
    if (!DiffAttribute(repo, attributes, d, &value)) return PatchPtr();
    switch (value) {
      case GIT_ATTR_VALUE_UNSPECIFIED:
        break;
      case GIT_ATTR_VALUE_TRUE:
        opts.flags |= GIT_DIFF_FORCE_TEXT;
        break;
      case GIT_ATTR_VALUE_FALSE:
        opts.flags |= GIT_DIFF_FORCE_BINARY;
        break;
      case GIT_ATTR_VALUE_STRING:
        old_path = d.old_file.path;
        new_path = d.new_file.path;
        break;
    }
  }
  if (old_link || new_link) {
    // A submodule on either side (a kind change has one): each side's text on its own.
    auto text = [&](bool side, bool link, const git_oid& id, const BlobPtr& blob) {
      if (!side) return std::string_view();
      if (link)
        return std::string_view(texts->emplace_back("Subproject commit " + OidHex(id) + "\n"));
      return std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                              static_cast<size_t>(git_blob_rawsize(blob.get())));
    };
    const std::string_view old_text = text(old_side, old_link, d.old_file.id, old_blob);
    const std::string_view new_text = text(new_side, new_link, d.new_file.id, new_blob);
    if (git_patch_from_buffers(&raw, old_side ? old_text.data() : nullptr, old_text.size(),
                               d.old_file.path, new_side ? new_text.data() : nullptr,
                               new_text.size(), d.new_file.path, &opts) != 0)
      return PatchPtr();
  } else if (git_patch_from_blobs(&raw, old_blob.get(), old_path, new_blob.get(), new_path,
                                  &opts) != 0) {
    return PatchPtr();
  }
  *old_blob_out = std::move(old_blob);
  return PatchPtr(raw);
}

// The own patch of a file's blobs (CommitFiles::own_patches), as libgit2's xdiff makes it for
// `engine`: for cgit's pages with XDF_NEED_MINIMAL, binary by cgit's NUL test (as BlobPatch forces
// it); for git's defaults (patch, rawdiff) with XDF_INDENT_HEURISTIC, binary as the diff attribute
// says or, without one, by the same NUL test (libgit2's auto driver). Then the line diff
// (line_diff.h) and xdl_emit_diff's hunks: changes whose old sides are no more than 2 * context
// lines apart share a hunk, with up to `context` lines around, the context lines the new side's
// (the same bytes); a line without a newline followed by libgit2's marker line. Left to libgit2
// (BlobPatch): a side over libgit2's limit for xdiff (1 GiB: its error, the file left out); for
// git's defaults also a diff driver's name (diff=NAME), a side over libgit2's size from which a
// file is binary (512 MiB), and equal blobs (a mode change alone). False when a blob or the
// attribute cannot be read. `attributes`: the repository's attribute sources (DiffAttribute).
bool OwnBlobPatch(git_repository* repo, FileDiff* f, const git_diff_options& opts,
                  DiffEngine engine, uint64_t attributes, std::deque<std::string>* texts) {
  const git_diff_delta& d = f->delta;
  git_attr_value_t attribute = GIT_ATTR_VALUE_UNSPECIFIED;
  if (engine == DiffEngine::kGitDefaults) {
    if (!DiffAttribute(repo, attributes, d, &attribute)) return false;
    if (attribute == GIT_ATTR_VALUE_STRING || git_oid_equal(&d.old_file.id, &d.new_file.id)) {
      f->patch = BlobPatch(repo, d, opts, engine, attributes, texts, &f->old_blob);
      return true;
    }
  }
  // Each side from the pack reader: the patch points into its bytes as they are (no copy into
  // libgit2's buffer, nothing kept in libgit2's object cache); a blob it does not have (a loose
  // object) through libgit2.
  auto read = [repo](const git_oid& id, ObjectBytes* bytes, BlobPtr* blob,
                     std::string_view* text) {
    if (git_oid_is_zero(&id)) return true;
    *bytes = ReadPacked(repo, id, GIT_OBJECT_BLOB);
    if (*bytes) {
      *text = bytes->view();
      return true;
    }
    git_blob* raw_blob = nullptr;
    if (git_blob_lookup(&raw_blob, repo, &id) != 0) return false;
    blob->reset(raw_blob);
    *text = BlobText(raw_blob);
    return true;
  };
  std::string_view a, b;
  if (!read(d.old_file.id, &f->old_bytes, &f->old_blob, &a) ||
      !read(d.new_file.id, &f->new_bytes, &f->new_blob, &b))
    return false;
  const size_t limit =
      engine == DiffEngine::kCgitPages ? size_t{1} << 30 : (size_t{1} << 29) - 1;
  if (a.size() > limit || b.size() > limit) {
    f->patch = BlobPatch(repo, d, opts, engine, attributes, texts, &f->old_blob);
    return true;
  }
  FilePatch& p = f->own;
  p.made = true;
  if (attribute == GIT_ATTR_VALUE_FALSE ||
      (attribute != GIT_ATTR_VALUE_TRUE && (LooksBinary(a) || LooksBinary(b)))) {
    p.binary = true;
    return true;
  }
  thread_local LineDiffer differ;
  thread_local std::vector<LineHunk> changes;
  const LineIndex old_lines = IndexLines(a);
  const LineIndex new_lines = IndexLinesLike(b, old_lines);
  differ.Diff(old_lines, old_lines.size(), new_lines, new_lines.size(), &changes,
              engine == DiffEngine::kCgitPages, engine == DiffEngine::kGitDefaults);
  auto emit = [&p](char origin, std::string_view line) {
    p.lines.push_back(PatchLine{origin, line});
    if (line.ends_with('\n')) return;
    // libgit2 names the marker after the other side of the line it follows.
    const char marker = origin == GIT_DIFF_LINE_ADDITION   ? GIT_DIFF_LINE_DEL_EOFNL
                        : origin == GIT_DIFF_LINE_DELETION ? GIT_DIFF_LINE_ADD_EOFNL
                                                           : GIT_DIFF_LINE_CONTEXT_EOFNL;
    p.lines.push_back(PatchLine{marker, "\n\\ No newline at end of file\n"});
  };
  const auto na = static_cast<int64_t>(old_lines.size());
  const auto nb = static_cast<int64_t>(new_lines.size());
  const int64_t ctx = opts.context_lines;
  for (size_t c = 0; c < changes.size();) {
    size_t e = c;  // the hunk's last change
    while (e + 1 < changes.size() &&
           static_cast<int64_t>(changes[e + 1].a - (changes[e].a + changes[e].a_count)) <= 2 * ctx)
      ++e;
    const LineHunk& first = changes[c];
    const LineHunk& last = changes[e];
    const auto end1 = static_cast<int64_t>(last.a + last.a_count);
    const auto end2 = static_cast<int64_t>(last.b + last.b_count);
    const int64_t s1 = std::max<int64_t>(static_cast<int64_t>(first.a) - ctx, 0);
    int64_t s2 = std::max<int64_t>(static_cast<int64_t>(first.b) - ctx, 0);
    const int64_t after = std::min({ctx, na - end1, nb - end2});
    const int64_t e1 = end1 + after, e2 = end2 + after;
    PatchHunk& h = p.hunks.emplace_back();
    h.first = p.lines.size();
    // xdiff's header: a side's start is its first line, 1-based, or the line before an empty side;
    // a count of 1 is left out.
    h.hunk.old_lines = static_cast<int>(e1 - s1);
    h.hunk.new_lines = static_cast<int>(e2 - s2);
    h.hunk.old_start = static_cast<int>(h.hunk.old_lines != 0 ? s1 + 1 : s1);
    h.hunk.new_start = static_cast<int>(h.hunk.new_lines != 0 ? s2 + 1 : s2);
    auto side = [](int start, int count) {
      return count == 1 ? std::to_string(start)
                        : std::to_string(start) + "," + std::to_string(count);
    };
    const std::string header = "@@ -" + side(h.hunk.old_start, h.hunk.old_lines) + " +" +
                               side(h.hunk.new_start, h.hunk.new_lines) + " @@\n";
    h.hunk.header_len = std::min(header.size(), sizeof h.hunk.header - 1);
    std::memcpy(h.hunk.header, header.data(), h.hunk.header_len);
    for (; s2 < static_cast<int64_t>(first.b); ++s2)
      emit(GIT_DIFF_LINE_CONTEXT, new_lines.line(static_cast<size_t>(s2)));
    for (size_t k = c; k <= e; ++k) {
      const LineHunk& x = changes[k];
      if (k > c) {
        const LineHunk& prev = changes[k - 1];
        for (size_t i1 = prev.a + prev.a_count, i2 = prev.b + prev.b_count; i1 < x.a && i2 < x.b;
             ++i1, ++i2)
          emit(GIT_DIFF_LINE_CONTEXT, new_lines.line(i2));
      }
      for (size_t i = x.a; i < x.a + x.a_count; ++i)
        emit(GIT_DIFF_LINE_DELETION, old_lines.line(i));
      for (size_t i = x.b; i < x.b + x.b_count; ++i)
        emit(GIT_DIFF_LINE_ADDITION, new_lines.line(i));
      p.removed += x.a_count;
      p.added += x.b_count;
    }
    for (int64_t i = end2; i < e2; ++i)
      emit(GIT_DIFF_LINE_CONTEXT, new_lines.line(static_cast<size_t>(i)));
    h.count = p.lines.size() - h.first;
    c = e + 1;
  }
  return true;
}

// The changes of libgit2's diff of two trees limited to `path`, as DiffTrees lists them (the
// same statuses, paths, canonical modes, ids and order; no rename detection): libgit2 compares
// modes as written, so a change of a mode alone that git does not see (100664 to 100644) is left
// out.
bool PathChanges(git_repository* repo, git_tree* old_tree, git_tree* new_tree,
                 const DiffOptions& options, std::string_view path,
                 std::vector<TreeChange>* changes, std::string* reason) {
  const DiffPtr diff = DiffOfTrees(repo, old_tree, new_tree, options, DiffEngine::kCgitPages,
                                   reason, path, false);
  if (!diff) return false;
  const size_t n = git_diff_num_deltas(diff.get());
  changes->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff.get(), i);
    const bool old_side = d->status != GIT_DELTA_ADDED, new_side = d->status != GIT_DELTA_DELETED;
    const uint32_t old_mode = old_side ? CanonicalMode(d->old_file.mode) : 0;
    const uint32_t new_mode = new_side ? CanonicalMode(d->new_file.mode) : 0;
    if (old_side && new_side && old_mode == new_mode &&
        git_oid_equal(&d->old_file.id, &d->new_file.id))
      continue;
    TreeChange& c = changes->emplace_back();
    c.status = d->status;
    c.path = d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path;
    c.old_mode = old_mode;
    c.new_mode = new_mode;
    if (old_side) git_oid_cpy(&c.old_id, &d->old_file.id);
    if (new_side) git_oid_cpy(&c.new_id, &d->new_file.id);
  }
  return true;
}

// The own tree diff's `changes` with git's renames paired (for cgit's pages), as *out's files,
// each with its patch when out->patches.
bool FilesOfChanges(git_repository* repo, std::vector<TreeChange> changes,
                    const DiffOptions& options, DiffEngine engine, CommitFiles* out,
                    std::string* reason) {
  bool added = false, deleted = false;
  for (const TreeChange& c : changes) {
    added |= c.status == GIT_DELTA_ADDED;
    deleted |= c.status == GIT_DELTA_DELETED;
  }
  // git looks for renames only with both deletions and additions, and patch and rawdiff (git's
  // defaults) never.
  if (added && deleted && engine == DiffEngine::kCgitPages &&
      !DetectRenames(repo, &changes, options.rename_limit, out->blob_lines, reason))
    return false;
  const git_diff_options opts = EngineOptions(options, engine);
  out->files.resize(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    const TreeChange& c = changes[i];
    git_diff_delta& d = out->files[i].delta;
    d.status = c.status;
    d.nfiles = static_cast<uint16_t>(
        c.status == GIT_DELTA_ADDED || c.status == GIT_DELTA_DELETED ? 1 : 2);
    const char* p = out->paths.emplace_back(c.path).c_str();
    d.old_file.path = c.status == GIT_DELTA_RENAMED ? out->paths.emplace_back(c.old_path).c_str()
                                                    : p;
    d.new_file.path = p;
    d.similarity = static_cast<uint16_t>(c.score * 100 / kMaxSimilarity);
    d.old_file.mode = static_cast<uint16_t>(c.old_mode);
    d.new_file.mode = static_cast<uint16_t>(c.new_mode);
    git_oid_cpy(&d.old_file.id, &c.old_id);
    git_oid_cpy(&d.new_file.id, &c.new_id);
    if (!out->patches) continue;
    if (out->own_patches && !options.ignorews && options.context > 0 && !IsLinkChange(d)) {
      if (!OwnBlobPatch(repo, &out->files[i], opts, engine, out->attributes, &out->paths))
        out->files[i].own = FilePatch{};
    } else {
      out->files[i].patch = BlobPatch(repo, d, opts, engine, out->attributes, &out->paths,
                                      &out->files[i].old_blob);
    }
  }
  return true;
}

// kOwnRaw's list: the trees read raw by their ids (the commit's, and its first parent's from
// libgit2's commit, no tree parsed); false with *handled false when the path is one libgit2's
// pathspec reads as a pattern (PlainPath) or a tree on the way to it cannot be read: kOwn then
// gives libgit2's answer.
bool RawTreeChanges(git_repository* repo, git_commit* commit, git_commit* other,
                    std::string_view path, std::vector<TreeChange>* changes, bool* handled,
                    std::string* reason) {
  *handled = path.empty() || PlainPath(path);
  if (!*handled) return false;
  const git_oid* new_tree = git_commit_tree_id(commit);
  const git_oid* old_tree = nullptr;
  CommitPtr parent;
  if (other == nullptr && git_commit_parentcount(commit) > 0) {
    git_commit* raw_parent = nullptr;
    if (git_commit_parent(&raw_parent, commit, 0) != 0) {
      const git_error* e = git_error_last();
      *reason = std::string("cannot read the parent: ") + (e ? e->message : "unknown error");
      return false;
    }
    parent.reset(raw_parent);
    other = raw_parent;
  }
  if (other != nullptr) old_tree = git_commit_tree_id(other);
  RawObjects objects(repo);
  if (path.empty()) return DiffTreeIds(repo, &objects, old_tree, new_tree, changes, reason);
  if (DiffTreePath(repo, &objects, old_tree, new_tree, path, changes, reason)) return true;
  *handled = !objects.incomplete();
  changes->clear();
  return false;
}

}  // namespace

bool CommitFileDiffs(git_repository* repo, git_commit* commit, git_commit* other,
                     const DiffOptions& options, std::string_view path, CommitFiles* out,
                     std::string* reason, FileDiffPath how, bool* used_own, DiffEngine engine) {
  if (used_own != nullptr) *used_own = false;
  // The trees and blobs libgit2 reads come from the own pack reader: libdeflate, its base cache.
  const PackedReadsScope packed_reads;
  if (how == FileDiffPath::kOwnRaw) {
    std::vector<TreeChange> changes;
    bool handled = false;
    if (RawTreeChanges(repo, commit, other, path, &changes, &handled, reason)) {
      if (used_own != nullptr) *used_own = path.empty();
      return FilesOfChanges(repo, std::move(changes), options, engine, out, reason);
    }
    if (handled) return false;
    how = FileDiffPath::kOwn;
  }
  TreePtr old_tree, new_tree;
  if (!CommitTrees(repo, commit, other, &old_tree, &new_tree, reason)) return false;
  if (how == FileDiffPath::kOwn) {
    std::vector<TreeChange> changes;
    if (path.empty() ? !DiffTrees(repo, old_tree.get(), new_tree.get(), &changes, reason)
                     : !PathChanges(repo, old_tree.get(), new_tree.get(), options, path, &changes,
                                    reason))
      return false;
    if (used_own != nullptr) *used_own = path.empty();
    return FilesOfChanges(repo, std::move(changes), options, engine, out, reason);
  }
  out->diff =
      DiffOfTrees(repo, old_tree.get(), new_tree.get(), options, engine, reason, path, true);
  if (!out->diff) return false;
  const size_t n = git_diff_num_deltas(out->diff.get());
  out->files.resize(n);
  for (size_t i = 0; i < n; ++i) {
    FileDiff& f = out->files[i];
    git_patch* raw = nullptr;
    if (out->patches && git_patch_from_diff(&raw, out->diff.get(), i) == 0 && raw != nullptr)
      f.patch.reset(raw);
    // Copied after the patch is made: making it sets the delta's binary flags.
    f.delta = *git_diff_get_delta(out->diff.get(), i);
  }
  return true;
}

FilePatch PatchLinesOf(git_patch* patch) {
  FilePatch p;
  if (patch == nullptr) return p;
  p.made = true;
  p.binary = (git_patch_get_delta(patch)->flags & GIT_DIFF_FLAG_BINARY) != 0;
  size_t context = 0;
  git_patch_line_stats(&context, &p.added, &p.removed, patch);
  const size_t hunks = git_patch_num_hunks(patch);
  for (size_t h = 0; h < hunks; ++h) {
    const git_diff_hunk* hunk = nullptr;
    size_t lines = 0;
    if (git_patch_get_hunk(&hunk, &lines, patch, h) != 0) continue;
    PatchHunk& out = p.hunks.emplace_back();
    out.hunk = *hunk;
    out.first = p.lines.size();
    for (size_t l = 0; l < lines; ++l) {
      const git_diff_line* line = nullptr;
      if (git_patch_get_line_in_hunk(&line, patch, h, l) != 0) continue;
      p.lines.push_back(PatchLine{line->origin, std::string_view(line->content, line->content_len)});
    }
    out.count = p.lines.size() - out.first;
  }
  return p;
}

bool SplitKindChange(git_repository* repo, uint64_t attributes, const FileDiff& change,
                     FileDiff* deletion, FileDiff* addition, std::deque<std::string>* texts) {
  const git_diff_options opts = EngineOptions(DiffOptions{}, DiffEngine::kGitDefaults);
  deletion->delta = change.delta;
  deletion->delta.status = GIT_DELTA_DELETED;
  deletion->delta.nfiles = 1;
  deletion->delta.new_file.mode = 0;
  deletion->delta.new_file.id = git_oid{};
  addition->delta = change.delta;
  addition->delta.status = GIT_DELTA_ADDED;
  addition->delta.nfiles = 1;
  addition->delta.old_file.mode = 0;
  addition->delta.old_file.id = git_oid{};
  deletion->patch = BlobPatch(repo, deletion->delta, opts, DiffEngine::kGitDefaults, attributes,
                              texts, &deletion->old_blob);
  addition->patch = BlobPatch(repo, addition->delta, opts, DiffEngine::kGitDefaults, attributes,
                              texts, &addition->old_blob);
  return deletion->patch && addition->patch;
}

bool IsLinkChange(const git_diff_delta& d) {
  return d.old_file.mode == GIT_FILEMODE_COMMIT || d.new_file.mode == GIT_FILEMODE_COMMIT;
}

LinkCounts CountLinkChange(git_repository* repo, const git_diff_delta& d, bool ignorews) {
  LinkCounts counts;
  git_odb* raw_odb = nullptr;
  OdbPtr odb(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
  OdbObjectPtr objects[2];
  std::string_view sides[2];
  const git_diff_file* files[2] = {&d.old_file, &d.new_file};
  for (int i = 0; i < 2; ++i) {
    git_odb_object* raw = nullptr;
    if (odb == nullptr || git_oid_is_zero(&files[i]->id) ||
        git_odb_read(&raw, odb.get(), &files[i]->id) != 0)
      continue;  // no side, or a submodule's commit this repository does not have: nothing
    objects[i].reset(raw);
    sides[i] = std::string_view(static_cast<const char*>(git_odb_object_data(raw)),
                                git_odb_object_size(raw));
  }
  counts.old_size = sides[0].size();
  counts.new_size = sides[1].size();
  if (LooksBinary(sides[0]) || LooksBinary(sides[1])) {
    counts.binary = true;
    return counts;
  }
  DiffOptions options;
  options.ignorews = ignorews;
  const git_diff_options opts = EngineOptions(options, DiffEngine::kCgitPages);
  git_patch* raw = nullptr;
  if (git_patch_from_buffers(&raw, sides[0].data(), sides[0].size(), d.old_file.path,
                             sides[1].data(), sides[1].size(), d.new_file.path, &opts) != 0)
    return counts;
  const PatchPtr patch(raw);
  size_t context = 0;
  git_patch_line_stats(&context, &counts.added, &counts.removed, patch.get());
  return counts;
}

Page ErrorPage(int status, std::string reason) {
  Page page;
  page.status = status;
  page.content_type = "text/plain; charset=UTF-8";
  page.body = reason + "\n";
  page.reason = std::move(reason);
  return page;
}

}  // namespace shellac::gitfrag
