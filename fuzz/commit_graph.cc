// libFuzzer target: git's commit-graph file (gitfrag/commit_graph.h), one layer read from the
// input's bytes as CommitGraph::FromBytes reads a mapped file.
// Checked on every input:
// - no crash, hang or undefined behaviour (no read outside the input);
// - a graph that is accepted answers within its bounds: every position's id is found at that
//   position, parents are positions of the graph, dates fit git's 34 bits, a Bloom query answers;
// - reading twice gives the same answers.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/check.h"
#include "gitfrag/commit_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shellac::gitfrag::CommitGraph;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto graph = CommitGraph::FromBytes({bytes}, &error);
  const auto again = CommitGraph::FromBytes({bytes}, nullptr);
  FUZZ_CHECK((graph == nullptr) == (again == nullptr));
  if (!graph) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  const CommitGraph::PathKeys keys = graph->Keys("a/b");
  std::vector<uint32_t> parents, parents_again;
  const uint32_t n = graph->size() < 4096 ? graph->size() : 4096;
  for (uint32_t pos = 0; pos < n; ++pos) {
    const git_oid id = graph->Id(pos);
    FUZZ_CHECK(graph->Find(id) == pos);
    const bool ok = graph->Parents(pos, &parents);
    FUZZ_CHECK(ok == again->Parents(pos, &parents_again));
    if (ok) {
      FUZZ_CHECK(parents == parents_again);
      for (const uint32_t p : parents) FUZZ_CHECK(p < graph->size());
    }
    const int64_t time = graph->Time(pos);
    FUZZ_CHECK(time >= 0 && time < (int64_t{1} << 34));
    FUZZ_CHECK(graph->MaybeChanged(pos, keys) == again->MaybeChanged(pos, keys));
  }
  return 0;
}
