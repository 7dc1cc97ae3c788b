// shellac's own look for its cgit-style pages when no forge is behind it: a stylesheet written
// for cgit's class names (so a forge's cgit.css replaces it as it is) and a logo. Served at the
// css= and logo= paths when no backend is configured.
#include "proxy/assets.h"

namespace shellac::proxy {

const std::string_view kStylesheet = R"CSS(/* shellac's own stylesheet for its cgit-style pages. It styles cgit's class names, so a forge's
   cgit.css can replace it as it is. */
:root {
  --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --accent: #0969da;
  --head: #eef2f6; --add: #1a7f37; --add-bg: #dafbe1; --del: #cf222e; --del-bg: #ffebe9;
}
body { margin: 0; background: #fff; color: var(--ink);
  font: 14px/1.45 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
div#cgit { max-width: 1200px; margin: 0 auto; padding: 0 16px 24px; }
table { border-collapse: collapse; }
pre, code, td.ls-mode, td.oid, td.sha1, td.hex, table.diff, div.commit-msg, table.blob,
td.linenumbers, span.age-mins, td.ls-size { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; }

/* header: logo, repository name, branch switcher */
table#header { width: 100%; margin: 16px 0 8px; }
table#header td.logo { width: 64px; padding-right: 12px; vertical-align: middle; }
table#header td.logo img { width: 56px; height: 56px; display: block; }
table#header td.main { font-size: 22px; font-weight: 600; }
table#header td.main a { color: var(--ink); }
table#header td.sub { color: var(--muted); border-top: 1px solid var(--line); padding-top: 4px; }
table#header td.form { text-align: right; vertical-align: top; white-space: nowrap; }
td.right, th.right, .right { text-align: right; }
select, input { font: inherit; padding: 2px 6px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--soft); color: var(--ink); }
input[type=submit] { cursor: pointer; }

/* tabs */
table.tabs { width: 100%; border-bottom: 1px solid var(--line); margin-bottom: 12px; }
table.tabs td { padding: 0; vertical-align: bottom; }
table.tabs td a { display: inline-block; padding: 8px 14px; color: var(--muted);
  border-bottom: 2px solid transparent; margin-bottom: -1px; }
table.tabs td a:hover { color: var(--ink); text-decoration: none; border-bottom-color: var(--line); }
table.tabs td a.active { color: var(--ink); font-weight: 600; border-bottom-color: #fd8c73; }
table.tabs td.form { text-align: right; padding-bottom: 6px; }
table.tabs td.form form { margin: 0; }
div.path { margin: 8px 0; padding: 6px 10px; background: var(--soft); border: 1px solid var(--line);
  border-radius: 6px; }
div.content { margin-top: 8px; }

/* lists: repository index, log, refs, summary, tree */
table.list { width: 100%; border: 1px solid var(--line); border-radius: 6px; }
table.list th { text-align: left; background: var(--head); color: var(--muted); font-weight: 600;
  padding: 6px 10px; border-bottom: 1px solid var(--line); }
table.list th.right { text-align: right; }
table.list td { padding: 5px 10px; border-top: 1px solid #eaeef2; vertical-align: top; }
table.list tr:hover td { background: #f6f8fa; }
table.list tr.nohover:hover td { background: none; }
table.list tr.nohover td { border-top: none; }
table.list td.reposection { font-weight: 600; padding-top: 14px; color: var(--muted); }
table.list td.sublevel-repo { padding-left: 24px; }
table.nowrap td { white-space: nowrap; }
td.ls-mode { color: var(--muted); width: 7em; }
td.ls-size { text-align: right; color: var(--muted); }
a.ls-dir { font-weight: 600; }
a.button { display: inline-block; margin-left: 6px; padding: 0 6px; font-size: 12px;
  border: 1px solid var(--line); border-radius: 4px; color: var(--muted); background: var(--soft); }
a.button:hover { color: var(--accent); text-decoration: none; }
ul.pager { list-style: none; text-align: center; padding: 0; margin: 14px 0; }
ul.pager li { display: inline-block; margin: 0 6px; }

/* ages */
span.age-mins { font-weight: 600; color: var(--add); }
span.age-hours { color: var(--add); }
span.age-days { color: #4d7c0f; }
span.age-weeks { color: var(--muted); }
span.age-months, span.age-years { color: #8c959f; }

/* decorations */
span.decoration a { display: inline-block; margin-left: 6px; padding: 0 6px; font-size: 11px;
  border-radius: 10px; border: 1px solid; }
a.branch-deco { color: #0550ae; background: #ddf4ff; border-color: #54aeff !important; }
a.tag-deco, a.tag-annotated-deco { color: #7d4e00; background: #fff8c5; border-color: #d4a72c !important; }
a.remote-deco { color: #6639ba; background: #fbefff; border-color: #c297ff !important; }
a.deco { color: #1a7f37; background: #dafbe1; border-color: #4ac26b !important; }

/* commit and tag pages */
table.commit-info { margin: 4px 0 12px; border: 1px solid var(--line); border-radius: 6px; }
table.commit-info th, table.commit-info td { padding: 3px 10px; text-align: left; vertical-align: top; }
table.commit-info th { color: var(--muted); font-weight: 600; }
table.commit-info td:first-child { color: var(--muted); }
div.commit-subject { font-size: 16px; font-weight: 600; margin: 12px 0 6px; }
div.commit-msg { white-space: pre-wrap; margin: 0 0 12px; padding: 8px 12px; background: var(--soft);
  border-radius: 6px; }
div.notes-header { font-weight: 600; margin-top: 8px; }
div.notes { white-space: pre-wrap; padding: 6px 12px; background: #fff8c5; border-radius: 6px; }
div.cgit-panel { float: right; margin: 0 0 8px 12px; }
div.cgit-panel table { border: 1px solid var(--line); border-radius: 6px; background: var(--soft); }
div.cgit-panel th { text-align: center; padding: 4px; }
div.cgit-panel td { padding: 2px 6px; }
div.diffstat-header { font-weight: 600; margin: 10px 0 4px; }
table.diffstat { border: 1px solid var(--line); border-radius: 6px; }
table.diffstat td { padding: 1px 8px; }
table.diffstat td.upd a, table.diffstat td.add a { color: var(--ink); }
table.diffstat td.del a { color: var(--del); }
table.diffstat td.graph { width: 500px; }
table.diffstat td.graph table { border: none; height: 7px; }
td.add { background: var(--add); }
td.rem { background: var(--del); }
td.none { background: none; }
div.diffstat-summary { color: var(--muted); margin: 4px 0 12px; }

/* diffs */
table.diff { width: 100%; }
table.diff td { padding: 0 8px; }
table.diff td div.head { font-weight: 600; margin-top: 16px; padding: 6px 8px; background: var(--head);
  border: 1px solid var(--line); border-radius: 6px 6px 0 0; }
table.diff td div.hunk { color: #6639ba; background: #f5f0ff; margin-top: 4px; }
table.diff td div.add { color: var(--add); background: var(--add-bg); }
table.diff td div.del { color: var(--del); background: var(--del-bg); }
table.diff td div.ctx { color: var(--ink); }
table.ssdiff td { font-family: ui-monospace, monospace; font-size: 12px; padding: 0 6px; }
table.ssdiff td.lineno { color: var(--muted); text-align: right; }
table.ssdiff td.add { color: var(--add); background: var(--add-bg); }
table.ssdiff td.del { color: var(--del); background: var(--del-bg); }
table.ssdiff td.changed { background: #fff8c5; }
table.ssdiff td.hunk { color: #6639ba; background: #f5f0ff; }
table.ssdiff td.head { font-weight: 600; background: var(--head); }
table.ssdiff td.add_dark, table.ssdiff td.del_dark { font-weight: 600; }

/* file view */
table.blob { width: 100%; margin-top: 8px; border: 1px solid var(--line); border-radius: 6px; }
table.blob td { padding: 0; vertical-align: top; }
table.blob pre { margin: 0; padding: 8px 0; }
td.linenumbers { width: 1%; text-align: right; background: var(--soft); border-right: 1px solid var(--line); }
td.linenumbers pre { padding: 8px 10px !important; }
td.linenumbers a { color: #8c959f; }
td.lines pre { padding-left: 12px !important; }
table.bin-blob { margin-top: 8px; border: 1px solid var(--line); }
table.bin-blob th { background: var(--head); padding: 4px 8px; }
table.bin-blob td { padding: 0 8px; white-space: pre; }
div.error { color: var(--del); background: var(--del-bg); border: 1px solid #ffcecb; border-radius: 6px;
  padding: 8px 12px; margin: 8px 0; }

/* about and stats */
div#summary { padding: 8px 16px; border: 1px solid var(--line); border-radius: 6px; }
div#summary pre { background: var(--soft); padding: 8px; border-radius: 6px; overflow: auto; }
table.stats { border: 1px solid var(--line); }
table.stats th, table.stats td { padding: 3px 10px; border-top: 1px solid #eaeef2; }
table.stats td.sum { font-weight: 600; }
table.vgraph, table.hgraph { border: 1px solid var(--line); }
table.hgraph td.bar { background: var(--accent); }

/* footer */
div.footer { margin-top: 24px; padding-top: 8px; border-top: 1px solid var(--line); color: var(--muted);
  font-size: 12px; text-align: center; }
)CSS";

const std::string_view kLogo = R"SVG(<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
  <title>shellac</title>
  <rect x="2" y="2" width="60" height="60" rx="14" fill="#7a2e0e"/>
  <path d="M32 11 C45 11 53 20 53 31 C53 43 44 52 32 52 C22 52 15 45 15 36 C15 28 21 23 28 23
           C34 23 38 27 38 32 C38 37 35 40 31 40 C28 40 26 38 26 35" fill="none" stroke="#f6c453"
        stroke-width="5" stroke-linecap="round"/>
  <circle cx="26" cy="35" r="3.5" fill="#f6c453"/>
  <circle cx="47" cy="50" r="4" fill="#fde7a9"/>
</svg>
)SVG";

}  // namespace shellac::proxy
