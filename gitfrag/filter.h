// Running a cgit filter (about-filter) as cgit does: the program gets the file name as its one
// argument and the file on its standard input; what it writes to its standard output is the page's
// content. Bounded in time and in output: a filter that runs past its time is killed, and so is
// one that writes more than the limit. Blocks the calling thread (a render pool thread).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace shellac::gitfrag {

struct FilterLimits {
  std::chrono::milliseconds timeout{10000};
  size_t max_output = 8 << 20;
};

struct FilterResult {
  bool ok = false;     // ran and ended on its own within the limits (any exit status)
  std::string output;  // its standard output (up to the limit)
  std::string error;   // why not ok (not started, killed after its time or past the output
                       // limit); or, when ok, a non-zero exit ("exited with status 2")
};

// Whether cgit would run `command` as a program: no "TYPE:" prefix (a one-letter one is a drive,
// as cgit reads it) or "exec:". A "lua:" filter runs inside cgit: shellac does not run it.
bool IsExecFilter(std::string_view command);

// `command`: the program's path ("exec:" prefix allowed, as cgit's). Its standard error goes to
// shellac's; it runs in shellac's working folder with shellac's environment plus `env`
// ("NAME=value" each: cgit's CGIT_REPO_URL and the like).
FilterResult RunFilter(std::string_view command, std::string_view argument, std::string_view input,
                       const FilterLimits& limits, const std::vector<std::string>& env = {});

}  // namespace shellac::gitfrag
