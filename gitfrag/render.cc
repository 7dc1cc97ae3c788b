#include "gitfrag/render.h"

#include <iconv.h>

#include <cstdio>
#include <ctime>

#include "base/text.h"

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

void RepoUrl(const PageContext& ctx, std::string_view page, std::string_view path, Args args) {
  ctx.out.Text(ctx.chrome.virtual_root).UrlPart(ctx.repo.url, /*keep_slash=*/true).Raw("/");
  if (!page.empty()) ctx.out.Raw(page).Raw("/");
  ctx.out.UrlPart(path, /*keep_slash=*/true);
  QueryArgs(ctx.out, args);
}

void PageStart(const PageContext& ctx, std::string_view title, std::string_view active_tab,
               std::string_view id) {
  Writer& out = ctx.out;
  const Route& r = ctx.route;
  out.Raw("<!DOCTYPE html>\n<html lang='en'>\n<head>\n<title>").Text(title).Raw("</title>\n");
  out.BeginShared();  // up to the id: the same on every page of this repository
  out.Raw("<meta name='generator' content='shellac " SHELLAC_VERSION "'/>\n");
  out.Raw("<meta name='robots' content='index, nofollow'/>\n");
  out.Raw("<link rel='stylesheet' type='text/css' href='").Text(ctx.chrome.css).Raw("'/>\n");
  out.Raw("<link rel='shortcut icon' href='/favicon.ico'/>\n</head>\n<body>\n");
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
  out.EndShared();
  if (!id.empty()) out.Raw("<input type='hidden' name='id' value='").Text(id).Raw("'/>");
  out.BeginShared();  // the branch list: the same for this repository and branch
  out.Raw("<select name='h' onchange='this.form.submit();'>\n");
  const RefIndex& refs = ctx.lease.refs();
  const std::string& current = r.head.empty() ? refs.head_branch() : r.head;
  for (const auto& branch : refs.branches()) {
    out.Raw("<option value='").Text(branch).Raw("'");
    if (branch == current) out.Raw(" selected='selected'");
    out.Raw(">").Text(branch).Raw("</option>\n");
  }
  out.Raw("</select> <input type='submit' value='switch'/></form></td></tr>\n");
  out.Raw("<tr><td class='sub'>")
      .Text(ctx.repo.desc.empty() ? std::string_view("[no description]")
                                  : std::string_view(ctx.repo.desc))
      .Raw("</td><td class='sub right'>")
      .Text(ctx.repo.owner)
      .Raw("</td></tr></table>\n");

  // Tabs. The commit and diff tabs keep the diff options, as cgit's do.
  const std::string context = r.diff.context != 3 ? std::to_string(r.diff.context) : "";
  const std::string_view ignorews = r.diff.ignorews ? "1" : "";
  const std::string dt = r.diff.dt != 0 ? std::to_string(r.diff.dt) : "";
  // Tabs of pages about a path keep it (cgit's path-limited commit/diff/log/tree links).
  auto tab = [&](std::string_view name, std::string_view page, Args args) {
    out.Raw("<a");
    if (name == active_tab) out.Raw(" class='active'");
    out.Raw(" href='");
    const bool keeps_path = page == "log" || page == "tree" || page == "commit" || page == "diff";
    RepoUrl(ctx, page, keeps_path ? std::string_view(r.path) : std::string_view(), args);
    out.Raw("'>").Raw(name).Raw("</a>");
  };
  out.Raw("<table class='tabs'><tr><td>\n");
  out.EndShared();
  tab("summary", "", {{"h", r.head}});
  tab("refs", "refs", {{"h", r.head}, {"id", id}});
  tab("log", "log", {{"h", r.head}});
  tab("tree", "tree", {{"h", r.head}, {"id", id}});
  tab("commit", "commit",
      {{"h", r.head}, {"id", id}, {"context", context}, {"ignorews", ignorews}, {"dt", dt}});
  tab("diff", "diff",
      {{"h", r.head},
       {"id", id},
       {"id2", r.id2},
       {"context", context},
       {"ignorews", ignorews},
       {"dt", dt}});
  out.Raw("</td><td class='form'><form class='right' method='get' action='");
  RepoUrl(ctx, "log", r.path, {});
  out.Raw("'>\n");
  if (!r.head.empty()) out.Raw("<input type='hidden' name='h' value='").Text(r.head).Raw("'/>");
  if (!id.empty()) out.Raw("<input type='hidden' name='id' value='").Text(id).Raw("'/>");
  out.BeginShared();
  out.Raw(
      "<select name='qt'>\n<option value='grep'>log msg</option>\n<option "
      "value='author'>author</option>\n"
      "<option value='committer'>committer</option>\n<option "
      "value='range'>range</option>\n</select>\n"
      "<input class='txt' type='search' size='10' name='q' value=''/>\n"
      "<input type='submit' value='search'/>\n</form>\n</td></tr></table>\n");
  out.EndShared();
  if (!r.path.empty()) {
    // Breadcrumbs: each leading part of the path links to this page limited to it.
    out.Raw("<div class='path'>path: <a href='");
    RepoUrl(ctx, active_tab, "", {{"h", r.head}, {"id", id}});
    out.Raw("'>root</a>");
    for (size_t end = 0; end != std::string::npos;) {
      end = r.path.find('/', end + 1);
      const std::string_view prefix = std::string_view(r.path).substr(0, end);
      const size_t start = prefix.rfind('/');
      out.Raw("/<a href='");
      RepoUrl(ctx, active_tab, prefix, {{"h", r.head}, {"id", id}});
      out.Raw("'>")
          .Text(prefix.substr(start == std::string_view::npos ? 0 : start + 1))
          .Raw("</a>");
    }
    out.Raw("</div>");
  }
  out.Raw("<div class='content'>");
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
  switch (mode & 0170000) {
    case 0040000:
      return "d---------";
    case 0120000:
      return "lrwxrwxrwx";
    case 0160000:
      return "m---------";
    default:
      return (mode & 0111) ? "-rwxr-xr-x" : "-rw-r--r--";
  }
}

void WriteAge(Writer& out, const git_time& when, int64_t now, int64_t max_relative) {
  constexpr int64_t kMin = 60, kHour = 3600, kDay = 86400, kWeek = 7 * kDay, kMonth = 30 * kDay,
                    kYear = 365 * kDay;
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
  int64_t per;
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
  std::snprintf(text, sizeof text, "%.0f%s", static_cast<double>(secs) / static_cast<double>(per),
                unit);
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
    if (!git_oid_is_zero(&delta_.old_file.id) &&
        git_blob_lookup(&raw_blob, repo_, &delta_.old_file.id) == 0) {
      old_blob_.reset(raw_blob);
      std::string_view text(static_cast<const char*>(git_blob_rawcontent(raw_blob)),
                            static_cast<size_t>(git_blob_rawsize(raw_blob)));
      while (!text.empty()) {
        const size_t eol = text.find('\n');
        const size_t n = eol == std::string_view::npos ? text.size() : eol + 1;
        old_lines_.push_back(text.substr(0, n));
        text.remove_prefix(n);
      }
    }
  }
  for (long l = from; l > previous_start_ && l >= 0; --l) {
    if (static_cast<size_t>(l) >= old_lines_.size()) continue;
    std::string_view line = old_lines_[static_cast<size_t>(l)];
    const unsigned char c = static_cast<unsigned char>(line[0]);
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$')) continue;
    line = line.substr(0, 80);
    while (!line.empty() &&
           (line.back() == ' ' || line.back() == '\t' || line.back() == '\n' || line.back() == '\r'))
      line.remove_suffix(1);
    function_.assign(line);
    break;
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

DiffPtr CommitDiff(git_repository* repo, git_commit* commit, git_commit* other,
                   const DiffOptions& options, DiffEngine engine, std::string* reason,
                   std::string_view path) {
  auto fail = [&](const char* what) {
    const git_error* e = git_error_last();
    *reason = std::string(what) + ": " + (e ? e->message : "unknown error");
    return DiffPtr();
  };
  git_tree* raw_new = nullptr;
  if (git_commit_tree(&raw_new, commit) != 0) return fail("cannot read the commit's tree");
  TreePtr new_tree(raw_new);
  TreePtr old_tree;
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
    old_tree.reset(raw_old);
  }
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  opts.context_lines = static_cast<uint32_t>(options.context);
  const bool cgit_pages = engine == DiffEngine::kCgitPages;
  // git's diff machinery slides ambiguous hunks with the indent heuristic by default; cgit's own
  // xdiff call asks for a minimal diff and no heuristic.
  opts.flags |= cgit_pages ? GIT_DIFF_MINIMAL : GIT_DIFF_INDENT_HEURISTIC;
  if (options.ignorews) opts.flags |= GIT_DIFF_IGNORE_WHITESPACE;
  std::string path_copy(path);
  char* pathspec[] = {path_copy.data()};
  if (!path.empty()) {
    // A literal path (file or folder), not a glob: "a*b" names only the file called that.
    opts.pathspec.strings = pathspec;
    opts.pathspec.count = 1;
    opts.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
  }
  git_diff* raw_diff = nullptr;
  if (git_diff_tree_to_tree(&raw_diff, repo, old_tree.get(), new_tree.get(), &opts) != 0)
    return fail("cannot diff");
  DiffPtr diff(raw_diff);
  if (cgit_pages) {
    git_diff_find_options find = GIT_DIFF_FIND_OPTIONS_INIT;
    find.flags = GIT_DIFF_FIND_RENAMES;
    if (git_diff_find_similar(diff.get(), &find) != 0) return fail("rename detection failed");
  }
  return diff;
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
