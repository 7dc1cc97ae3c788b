// ctl: the operator's commands of the shellac binary, run as `shellac stat ...` and
// `shellac warm ...`. Both talk to a running shellac over its admin listener only (default
// 127.0.0.1:8081), so they need no access to its configuration, repositories or store.
#pragma once

namespace shellac::ctl {

// `shellac stat [--admin ADDR] [-1] [-j] [-i SECONDS]`: a live view of the instance's metrics.
// argv[0] is "stat". Returns the process exit status.
int RunStat(int argc, char** argv);

// `shellac warm [--admin ADDR] [--since WHEN] [--limit N] [--all-refs] [REPO...]`: renders and
// stores the repository-neutral parts of the repositories' history through the instance.
int RunWarm(int argc, char** argv);

}  // namespace shellac::ctl
