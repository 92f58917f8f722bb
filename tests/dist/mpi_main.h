#pragma once
// main() for the GoogleTest programs that mpirun starts (tests/dist.cmake):
// one ProcessGroup per process, reachable through pg(); only rank 0 prints the
// usual report, the other ranks print their failures; the exit status is
// non-zero on every rank when a test failed on any.
#include <gtest/gtest.h>

#include <graph/dist.h>

inline graph::dist::ProcessGroup*& pg_slot() {
  static graph::dist::ProcessGroup* p = nullptr;
  return p;
}
inline graph::dist::ProcessGroup& pg() { return *pg_slot(); }

namespace dist_test {

// Prints a non-zero rank's failures, with its rank.
class RankFailures : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailures(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::printf("[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                  r.summary());
  }

 private:
  int rank_;
};

inline int run_all(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  graph::dist::Options opt;
  opt.timeout = std::chrono::seconds(20);  // a failing test must not hang CI
  graph::dist::ProcessGroup group = graph::dist::ProcessGroup::from_environment(opt);
  pg_slot() = &group;
  if (group.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailures(group.rank()));
  }
  int failed = RUN_ALL_TESTS() != 0;
  graph::Tensor f = graph::full({1}, failed, graph::kInt64);
  group.all_reduce(f);
  return f.item<int64_t>() != 0 ? 1 : 0;
}

}  // namespace dist_test
