// The stats page (/REPO/stats/[PATH]?period=&ofs=): commits per author in each of the last four
// weeks, months, quarters or years (UTC), as cgit 1.2.3 counts them: the non-merge commits of h=
// (limited to PATH, with git's history simplification) committed since the first day of the
// oldest period shown, at the current time of day (git reads cgit's --since=YYYY-MM-DD so), by
// author name; the ofs= most active authors (10 by default, -1 all), an "Others" row for the
// rest and a total. max-stats (cgitrc) enables the periods up to the one it names; without it
// the page is refused as cgit refuses it. It depends on the branch head and on the clock, so it
// is rendered per request.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/raw_objects.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

// A walk that reads more than this (a path limit on a large repository, the year period) stops
// and says so on the page.
constexpr std::chrono::seconds kWalkLimit{5};

// Periods shown, as cgit's.
constexpr int kColumns = 4;

struct Period {
  char code;
  const char* name;
};
// cgit's order: max-stats=N enables the first N.
constexpr Period kPeriods[] = {{'w', "week"}, {'m', "month"}, {'q', "quarter"}, {'y', "year"}};

// The first day (00:00 UTC) of the period `t` falls in, moved `n` periods on (back when n < 0).
time_t PeriodStart(char code, time_t t, int n) {
  struct tm tm;
  gmtime_r(&t, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  switch (code) {
    case 'w': {
      const time_t day = timegm(&tm);
      return day - static_cast<time_t>((tm.tm_wday + 6) % 7) * 86400 +
             static_cast<time_t>(n) * 7 * 86400;
    }
    case 'm':
      tm.tm_mon += n;
      break;
    case 'q':
      tm.tm_mon = tm.tm_mon / 3 * 3 + 3 * n;
      break;
    default:  // 'y'
      tm.tm_mon = 0;
      tm.tm_year += n;
      break;
  }
  tm.tm_mday = 1;
  return timegm(&tm);  // normalises a month out of range
}

// The column heading of the period that starts at `start`: "W48 2026", "Nov 2026", "Q4 2026",
// "2026".
std::string Label(char code, time_t start) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm tm;
  gmtime_r(&start, &tm);
  char text[32];
  switch (code) {
    case 'w':
      std::strftime(text, sizeof text, "W%V %G", &tm);
      return text;
    case 'm':
      return std::string(kMonths[tm.tm_mon]) + " " + std::to_string(tm.tm_year + 1900);
    case 'q':
      return "Q" + std::to_string(tm.tm_mon / 3 + 1) + " " + std::to_string(tm.tm_year + 1900);
    default:
      return std::to_string(tm.tm_year + 1900);
  }
}

// cgit's walk starts at --since=YYYY-MM-DD (the oldest period's first day), which git reads as
// that day at the current local time of day: commits of that day before it are left out.
int64_t Since(time_t window_start, time_t now) {
  struct tm day, local;
  gmtime_r(&window_start, &day);
  localtime_r(&now, &local);
  local.tm_year = day.tm_year;
  local.tm_mon = day.tm_mon;
  local.tm_mday = day.tm_mday;
  local.tm_isdst = -1;
  return static_cast<int64_t>(mktime(&local));
}

// What the page counts of a commit, which its id fixes: kept in a SharedMemo, so the periods of a
// branch, its other branches and every fork with the same history read each commit once.
struct CommitStat {
  int64_t committer_time = 0;
  bool merge = false;
  std::string author;  // the author's name in UTF-8
};

struct CommitStatWeight {
  size_t operator()(const CommitStat& s) const { return sizeof(CommitStat) + s.author.size(); }
};

// The memo holds at most two generations of this many bytes (~60 K commits each).
constexpr size_t kStatGenerationBytes = size_t{4} << 20;

// Commit `id`'s counted fields, from the memo or read (raw through the pack reader and parsed
// there; one of another shape than git writes through libgit2); nullopt when it cannot be read.
std::optional<CommitStat> StatOf(RawObjects& objects, const git_oid& id) {
  static SharedMemo<git_oid, CommitStat, OidHash, OidEqual, CommitStatWeight> memo(
      kStatGenerationBytes);
  if (std::optional<CommitStat> known = memo.Find(id)) return known;
  // The fields are views into the raw bytes or libgit2's commit: both live to the block's end.
  const BackendObject raw = objects.Read(id, GIT_OBJECT_COMMIT);
  CommitPtr read;
  CommitFields fields;
  if (!raw || !ParsePlainCommit(raw.bytes(), &fields)) {
    git_commit* commit = nullptr;
    if (git_commit_lookup(&commit, objects.repo(), &id) != 0) return std::nullopt;
    read.reset(commit);
    fields = FieldsOf(commit);
  }
  CommitStat stat;
  stat.committer_time = fields.committer_time;
  stat.merge = fields.parents > 1;
  if (!stat.merge)  // a merge is not counted: its author is never asked for
    stat.author = ToUtf8(fields.author_name, fields.encoding ? fields.encoding->c_str() : nullptr);
  memo.Add(id, stat);
  return stat;
}

struct Author {
  long total = 0;  // every commit walked (the sort order), shown or not
  long by_period[kColumns] = {};  // the periods shown, oldest first
};

void WriteRow(Writer& out, std::string_view name_class, std::string_view name,
              std::string_view cell_class, std::string_view sum_class,
              const std::vector<const Author*>& authors) {
  out.Raw("<tr><td class='").Raw(name_class).Raw("'>").Text(name).Raw("</td>");
  long total = 0;
  for (int column = 0; column < kColumns; ++column) {
    long n = 0;
    for (const Author* a : authors) n += a->by_period[column];
    total += n;
    out.Raw("<td class='").Raw(cell_class).Raw("'>").Number(static_cast<uint64_t>(n)).Raw("</td>");
  }
  out.Raw("<td class='").Raw(sum_class).Raw("'>").Number(static_cast<uint64_t>(total)).Raw("</td></tr>");
}

}  // namespace

Page RenderStats(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  const Route& r = page_ctx.route;
  // cgit's error pages, in its order: the branch, then the period (a letter or a name).
  int status = 200;
  std::string reason;
  // A branch's tip from the ref index, no ref file or commit read (the walk needs only its id).
  const std::string tip = r.head.empty() ? ctx.lease.refs().head_branch() : r.head;
  const std::optional<git_oid> start = WalkStart(ctx, tip, &status, &reason);
  // A name of something else than a commit (git/git's junio-gpg-pub, a tag of a blob) is cgit's
  // table with no commits: its walk starts from no commit. A name of nothing, its error.
  if (!start && !NamesObject(ctx.lease.repo(), tip))
    return ErrorPage(status, "invalid branch: " + reason);

  const std::string code = r.period ? *r.period : "w";
  int index = -1;
  for (int i = 0; i < static_cast<int>(std::size(kPeriods)); ++i) {
    if ((code.size() == 1 && code[0] == kPeriods[i].code) || code == kPeriods[i].name) index = i;
  }
  if (index < 0)
    return ErrorPage(404, "Unknown statistics type: " + code.substr(0, code.empty() ? 0 : 1));
  const Period& period = kPeriods[index];
  if (index + 1 > static_cast<int>(ctx.repo.max_stats))
    return ErrorPage(400, std::string("Statistics type disabled: ") + period.name);

  // The periods shown, oldest first (their first days, and the next period's: `starts`), and the
  // walk back to the oldest one's first day. A commit is counted in the period whose first day it
  // follows (cgit: by the period's label, which names one period); one outside them (dated before
  // the oldest, as the walk's start at the current time of day in local time may let in, or after
  // now) only in its author's total.
  const time_t now = std::time(nullptr);
  time_t starts[kColumns + 1];
  std::vector<std::string> labels;
  for (int i = 0; i <= kColumns; ++i) starts[i] = PeriodStart(period.code, now, i + 1 - kColumns);
  for (int i = 0; i < kColumns; ++i) labels.push_back(Label(period.code, starts[i]));
  std::map<std::string, Author> by_name;  // byte order, as cgit's string list
  DateWalk walk(ctx.lease.repo(), start ? std::vector<git_oid>{*start} : std::vector<git_oid>{},
                nullptr, r.path);
  walk.set_since(Since(starts[0], now));
  walk.set_deadline(DateWalk::Clock::now() + kWalkLimit);
  RawObjects objects(ctx.lease.repo());
  git_oid id;
  while (walk.NextId(&id)) {
    const std::optional<CommitStat> stat = StatOf(objects, id);
    if (!stat || stat->merge) continue;  // cgit counts no merges
    const time_t when = static_cast<time_t>(stat->committer_time);
    Author& author = by_name[stat->author];
    if (when >= starts[0] && when < starts[kColumns]) {
      int column = kColumns - 1;
      while (when < starts[column]) --column;
      ++author.by_period[column];
    }
    ++author.total;
  }
  // Most commits first; equal totals in name order (cgit's sort keeps that order).
  std::vector<std::pair<const std::string*, const Author*>> authors;
  for (const auto& [name, author] : by_name) authors.emplace_back(&name, &author);
  std::stable_sort(authors.begin(), authors.end(),
                   [](const auto& a, const auto& b) { return a.second->total > b.second->total; });
  const int top_asked = r.ofs_signed != 0 ? r.ofs_signed : 10;
  const size_t top = top_asked <= 0 || static_cast<size_t>(top_asked) > authors.size()
                         ? authors.size()
                         : static_cast<size_t>(top_asked);

  Writer& out = ctx.out;
  PageStart(ctx, ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc),
            "stats", "");
  out.Raw("<div class='cgit-panel'><b>stat options</b><form method='get'>");
  if (!ctx.route.head.empty())
    out.Raw("<input type='hidden' name='h' value='").Text(ctx.route.head).Raw("'/>");
  if (!r.id.empty()) out.Raw("<input type='hidden' name='id' value='").Text(r.id).Raw("'/>");
  if (!r.id2.empty()) out.Raw("<input type='hidden' name='id2' value='").Text(r.id2).Raw("'/>");
  if (r.showmsg) out.Raw("<input type='hidden' name='showmsg' value='1'/>");
  out.Raw("<table><tr><td colspan='2'/></tr>");
  if (ctx.repo.max_stats > 1) {
    out.Raw("<tr><td class='label'>Period:</td><td class='ctrl'><select name='period' "
            "onchange='this.form.submit();'>");
    for (unsigned i = 0; i < ctx.repo.max_stats && i < std::size(kPeriods); ++i) {
      out.Raw("<option value='").Raw(std::string_view(&kPeriods[i].code, 1)).Raw("'");
      if (kPeriods[i].code == period.code) out.Raw(" selected='selected'");
      out.Raw(">").Raw(kPeriods[i].name).Raw("</option>\n");
    }
    out.Raw("</select></td></tr>");
  }
  out.Raw("<tr><td class='label'>Authors:</td><td class='ctrl'><select name='ofs' "
          "onchange='this.form.submit();'>");
  for (const auto& [value, label] : {std::pair<int, const char*>{10, "10"}, {25, "25"}, {50, "50"},
                                     {100, "100"}, {-1, "all"}}) {
    out.Raw("<option value='").Raw(std::to_string(value)).Raw("'");
    if (value == top_asked) out.Raw(" selected='selected'");
    out.Raw(">").Raw(label).Raw("</option>");
  }
  out.Raw("</select></td></tr><tr><td/><td class='ctrl'><noscript><input type='submit' "
          "value='Reload'/></noscript></td></tr></table></form></div>");
  out.Raw("<h2>Commits per author per ").Raw(period.name);
  if (!r.path.empty()) out.Raw(" (path '").Text(r.path).Raw("')");
  out.Raw("</h2><table class='stats'><tr><th>Author</th>");
  for (const std::string& label : labels) out.Raw("<th>").Text(label).Raw("</th>");
  out.Raw("<th>Total</th></tr>\n");
  for (size_t i = 0; i < top; ++i) {
    out.Raw("<tr><td class='left'>").Text(*authors[i].first).Raw("</td>");
    long total = 0;
    for (const long n : authors[i].second->by_period) {
      total += n;
      out.Raw("<td>").Number(static_cast<uint64_t>(n)).Raw("</td>");
    }
    out.Raw("<td class='sum'>").Number(static_cast<uint64_t>(total)).Raw("</td></tr>");
  }
  std::vector<const Author*> rest, all;
  for (size_t i = 0; i < authors.size(); ++i) {
    all.push_back(authors[i].second);
    if (i >= top) rest.push_back(authors[i].second);
  }
  if (top < authors.size())
    WriteRow(out, "left", "Others (" + std::to_string(rest.size()) + ")", "", "sum", rest);
  WriteRow(out, "total", "Total", "sum", "sum", all);
  out.Raw("</table>");
  if (walk.stopped()) {
    // Not cgit's: its walk has no bound. The page says where this one stopped.
    out.Raw("<div class='error'>[stopped: the walk read ")
        .Number(walk.visited())
        .Raw(" commits in ")
        .Number(static_cast<uint64_t>(kWalkLimit.count()))
        .Raw(" s; older commits are not counted]</div>");
  }
  PageEnd(out);
  return Page{};
}

}  // namespace shellac::gitfrag
