// The repository index ("/"): every configured repository grouped by section, with description,
// owner and idle time. Idle time comes from file modification times (the default branch's ref,
// packed-refs), so listing repositories opens none of them.
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <ctime>
#include <fstream>

#include "gitfrag/render.h"

namespace shellac::gitfrag {
namespace {

// When the repository last changed, as cgit estimates it without opening the repository.
int64_t LastModified(const std::string& git_dir) {
  std::ifstream head(git_dir + "/HEAD");
  std::string line;
  std::getline(head, line);
  struct stat st;
  if (line.starts_with("ref: ") && stat((git_dir + "/" + line.substr(5)).c_str(), &st) == 0)
    return st.st_mtime;
  if (stat((git_dir + "/packed-refs").c_str(), &st) == 0) return st.st_mtime;
  return 0;
}

}  // namespace

void WriteIndex(Writer& out, const Chrome& chrome,
                const std::vector<conf::Config::Repository>& repos, int ofs);

Page RenderIndex(const Chrome& chrome, const std::vector<conf::Config::Repository>& repos,
                 int ofs) {
  Page page;
  Writer out(&page.body);
  WriteIndex(out, chrome, repos, ofs);
  out.Flush();
  return page;
}

void WriteIndex(Writer& out, const Chrome& chrome,
                const std::vector<conf::Config::Repository>& repos, int ofs) {
  out.Raw("<!DOCTYPE html>\n<html lang='en'>\n<head>\n<title>")
      .Text(chrome.root_title)
      .Raw("</title>\n");
  WriteHeadLinks(out, chrome);
  out.Raw("</head>\n<body>\n");
  out.Raw("<div id='cgit'><table id='header'>\n<tr>\n<td class='logo' rowspan='2'><a href='")
      .Text(chrome.virtual_root)
      .Raw("'><img src='")
      .Text(chrome.logo)
      .Raw("' alt='cgit logo'/></a></td>\n<td class='main'>")
      .Text(chrome.root_title)
      .Raw("</td></tr>\n<tr><td class='sub'>")
      .Text(chrome.root_desc)
      .Raw("</td></tr></table>\n<table class='tabs'><tr><td>\n<a class='active' href='")
      .Text(chrome.virtual_root)
      .Raw("'>index</a></td><td class='form'><form method='get' action='")
      .Text(chrome.virtual_root)
      .Raw(
          "'>\n<input type='search' name='q' size='10' value=''/>\n<input type='submit' "
          "value='search'/>\n"
          "</form></td></tr></table>\n<div class='content'><table summary='repository list' "
          "class='list nowrap'>");
  // cgit's page: the repositories numbered (from 1) past ofs and up to ofs + max-repo-count,
  // summed in a C int (max-repo-count <= 0 is INT_MAX, so a page past the first is empty there);
  // the column titles come with the first row shown.
  const int page_length = chrome.max_repo_count > 0 ? chrome.max_repo_count : INT_MAX;
  const auto last =
      static_cast<int32_t>(static_cast<uint32_t>(ofs) + static_cast<uint32_t>(page_length));
  bool titles = false;

  // cgit's order (section-sort=1, repository-sort=name, case-sensitive-sort=1): by section (no
  // section first), then by name, byte by byte.
  std::vector<const conf::Config::Repository*> sorted;
  for (const auto& r : repos)
    if (!r.hide) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::tie(a->section, a->name) < std::tie(b->section, b->name);
  });
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const std::string* section = nullptr;
  int number = 0;
  for (const auto* r : sorted) {
    ++number;
    if (number <= ofs || number > last) continue;
    if (!titles) {
      titles = true;
      static const std::pair<const char*, const char*> kColumns[] = {
          {"name", "Name"}, {"desc", "Description"}, {"owner", "Owner"}, {"idle", "Idle"}};
      out.Raw("<tr class='nohover'>");
      for (const auto& [key, title] : kColumns) {
        out.Raw("<th class='left'><a href='").Text(chrome.virtual_root).Raw("?s=").Raw(key);
        out.Raw("'>").Raw(title).Raw("</a></th>");
      }
      if (chrome.index_links) out.Raw("<th class='left'>Links</th>");
      out.Raw("</tr>\n");
    }
    if (!r->section.empty() && (section == nullptr || *section != r->section)) {
      out.Raw("<tr class='nohover-highlight'><td colspan='")
          .Raw(chrome.index_links ? "5" : "4")
          .Raw("' class='reposection'>")
          .Text(r->section)
          .Raw("</td></tr>");
    }
    section = &r->section;
    // <a ...href='VIRTUAL_ROOT/URL/PAGE'> (`open` up to the href's quote).
    auto repo_link = [&](std::string_view open = "<a href='", std::string_view page = "") {
      out.Raw(open).Text(chrome.virtual_root).UrlPart(r->url, true).Raw("/").Raw(page).Raw("'>");
    };
    out.Raw(r->section.empty() ? "<tr><td class='toplevel-repo'>"
                               : "<tr><td class='sublevel-repo'>");
    repo_link();
    out.Text(r->name).Raw("</a></td><td>");
    repo_link();
    out.Text(r->desc.empty() ? std::string_view("[no description]") : std::string_view(r->desc))
        .Raw("</a></td><td>");
    out.Raw("<a href='")
        .Text(chrome.virtual_root)
        .Raw("?q=")
        .UrlPart(r->owner, false)
        .Raw("'>")
        .Text(r->owner);
    out.Raw("</a></td><td>");
    const int64_t modified = LastModified(r->path);
    if (modified > 0) WriteAge(out, git_time{modified, 0, '+'}, now, -1);
    if (chrome.index_links) {
      out.Raw("</td><td>");
      static const std::pair<const char*, const char*> kLinks[] = {
          {"", "summary"}, {"log/", "log"}, {"tree/", "tree"}};
      for (const auto& [page, label] : kLinks) {
        repo_link("<a class='button' href='", page);
        out.Raw(label).Raw("</a>");
      }
    }
    out.Raw("</td></tr>\n");
  }
  out.Raw("</table>");
  if (number > page_length) {
    out.Raw("<ul class='pager'>");
    for (int page = 0; static_cast<int64_t>(page) * page_length < number; ++page) {
      const int start = page * page_length;
      out.Raw("<li><a title='Page ").Number(page + 1).Raw("'");
      if (start == ofs) out.Raw(" class='current'");
      out.Raw(" href='").Text(chrome.virtual_root);
      if (start > 0) out.Raw("?ofs=").Number(start);
      out.Raw("'>[").Number(page + 1).Raw("]</a></li>");
    }
    out.Raw("</ul>");
  }
  out.Raw(
      "</div> <!-- class=content -->\n<div class='footer'>generated by "
      "shellac " SHELLAC_VERSION "</div>\n</div> <!-- id=cgit -->\n</body>\n</html>\n");
}

}  // namespace shellac::gitfrag
