// graph::dist collectives under mpirun (-np 2 and 3): every op, dtype and
// in-place variant against values each rank computes by hand; mismatched
// shapes and dtypes across ranks; bad arguments; the distributed sampler.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "mpi_main.h"

using namespace graph;
using graph::dist::ReduceOp;

namespace {

const DType kDTypes[] = {kFloat32, kFloat64, kInt64};

// Rank r's tensor: element i is (r + 1) * (i + 1), exact in every dtype.
Tensor rank_tensor(int r, const Shape& s, DType dt) {
  Tensor t = empty(s, kInt64);
  int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = (r + 1) * (i + 1);
  return t.to(dt);
}

std::vector<double> values(const Tensor& t) {
  Tensor d = t.contiguous().to(kFloat64);
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

Tensor ints(const std::vector<int64_t>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, kInt64);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t;
}

// 1 + 2 + ... + world: the sum over ranks of (r + 1).
int64_t rank_sum(int world) { return static_cast<int64_t>(world) * (world + 1) / 2; }

}  // namespace

TEST(Collectives, RankAndWorldSize) {
  const char* env = std::getenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_NE(env, nullptr) << "run under mpirun";
  EXPECT_EQ(pg().world_size(), std::atoi(env));
  EXPECT_EQ(pg().rank(), std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
  EXPECT_EQ(pg().backend_name(), "mpi");
}

TEST(Collectives, AllReduceSumAndAvgInPlaceAndOut) {
  const int w = pg().world_size(), r = pg().rank();
  for (DType dt : kDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor t = rank_tensor(r, {2, 3}, dt);
    Tensor out = pg().all_reduced(t);
    EXPECT_EQ(values(t), values(rank_tensor(r, {2, 3}, dt)));  // out of place: input unchanged
    pg().all_reduce(t);
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_EQ(values(t)[i], rank_sum(w) * (i + 1));
      EXPECT_EQ(values(out)[i], rank_sum(w) * (i + 1));
    }
    Tensor a = rank_tensor(r, {6}, dt);
    Tensor avg = pg().all_reduced(a, ReduceOp::Avg);
    pg().all_reduce(a, ReduceOp::Avg);
    for (int64_t i = 0; i < 6; ++i) {
      // int64 averages truncate, as integer division does.
      const double want = dt == kInt64 ? static_cast<double>(rank_sum(w) * (i + 1) / w)
                                       : static_cast<double>(rank_sum(w) * (i + 1)) / w;
      EXPECT_NEAR(values(avg)[i], want, dt == kFloat32 ? 1e-5 * want : 0);
      EXPECT_EQ(values(a)[i], values(avg)[i]);
    }
    EXPECT_EQ(avg.dtype(), dt);
  }
}

TEST(Collectives, BroadcastFromEachRoot) {
  const int w = pg().world_size(), r = pg().rank();
  for (DType dt : kDTypes)
    for (int root = 0; root < w; ++root) {
      Tensor t = rank_tensor(r, {5}, dt);
      Tensor copy = pg().broadcasted(t, root);
      EXPECT_EQ(values(t), values(rank_tensor(r, {5}, dt)));
      pg().broadcast(t, root);
      EXPECT_EQ(values(t), values(rank_tensor(root, {5}, dt)));
      EXPECT_EQ(values(copy), values(t));
    }
}

TEST(Collectives, AllGatherRowsAreRanks) {
  const int w = pg().world_size(), r = pg().rank();
  for (DType dt : kDTypes) {
    Tensor t = rank_tensor(r, {2, 2}, dt);
    Tensor g = pg().all_gather(t);
    ASSERT_EQ(g.sizes(), (Shape{w, 2, 2}));
    Tensor out = zeros({w, 2, 2}, dt);
    pg().all_gather(t, out);
    for (int q = 0; q < w; ++q) {
      EXPECT_EQ(values(g.slice(0, q, q + 1)), values(rank_tensor(q, {2, 2}, dt)));
      EXPECT_EQ(values(out.slice(0, q, q + 1)), values(rank_tensor(q, {2, 2}, dt)));
    }
  }
}

TEST(Collectives, ReduceScatterGivesEachRankItsChunk) {
  const int w = pg().world_size(), r = pg().rank();
  for (DType dt : kDTypes) {
    Tensor t = rank_tensor(r, {w * 2, 3}, dt);  // element i: (r + 1) * (i + 1)
    Tensor mine = pg().reduce_scatter(t);
    Tensor out = zeros({2, 3}, dt);
    pg().reduce_scatter(t, out, ReduceOp::Avg);
    ASSERT_EQ(mine.sizes(), (Shape{2, 3}));
    for (int64_t j = 0; j < 6; ++j) {
      const int64_t i = r * 6 + j + 1;
      EXPECT_EQ(values(mine)[j], rank_sum(w) * i);
      const double avg = dt == kInt64 ? static_cast<double>(rank_sum(w) * i / w) : double(rank_sum(w) * i) / w;
      EXPECT_NEAR(values(out)[j], avg, dt == kFloat32 ? 1e-5 * avg : 0);
    }
  }
}

TEST(Collectives, Barrier) {
  pg().barrier();
  pg().barrier();
}

TEST(Collectives, ShapeMismatchAcrossRanksIsReportedNotReduced) {
  const int r = pg().rank();
  Tensor t = r == 0 ? ones({2, 3}) : ones({3, 2});
  try {
    pg().all_reduce(t);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("mismatch across ranks"), std::string::npos) << m;
    EXPECT_NE(m.find("all_reduce"), std::string::npos) << m;
    EXPECT_NE(m.find(r == 0 ? "float [3, 2]" : "float [2, 3]"), std::string::npos) << m;
  }
  EXPECT_EQ(values(t), std::vector<double>(6, 1.0));  // not reduced
  // Every rank saw the mismatch: the group is still usable.
  Tensor ok = ones({2});
  pg().all_reduce(ok);
  EXPECT_EQ(values(ok), std::vector<double>(2, pg().world_size()));
}

TEST(Collectives, DTypeMismatchAcrossRanksIsReported) {
  Tensor t = pg().rank() == 0 ? ones({4}, kFloat32) : ones({4}, kFloat64);
  EXPECT_THROW(
      {
        try {
          pg().broadcast(t, 0);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("broadcast"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST(Collectives, BadArgumentsAreClearErrors) {
  const int w = pg().world_size();
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor t = ones({2, 3});
  Tensor nc = t.t();
  EXPECT_NE(message([&] { pg().all_reduce(nc); }).find("must be contiguous"), std::string::npos);
  Tensor b = ones({2}, DType::Bool);
  EXPECT_NE(message([&] { pg().all_reduce(b); }).find("is not supported"), std::string::npos);
  EXPECT_NE(message([&] { pg().broadcast(t, w); }).find("is not a rank"), std::string::npos);
  Tensor wrong = zeros({w + 1, 2, 3});
  EXPECT_NE(message([&] { pg().all_gather(t, wrong); }).find("the output must be"), std::string::npos);
  Tensor odd = ones({w * 2 + 1});
  EXPECT_NE(message([&] { pg().reduce_scatter(odd); }).find("multiple of the world size"), std::string::npos);
  Tensor undef;
  EXPECT_NE(message([&] { pg().all_reduce(undef); }).find("undefined"), std::string::npos);
  EXPECT_NE(message([&] { pg().set_timeout(std::chrono::milliseconds(0)); }).find("positive"), std::string::npos);
  EXPECT_NE(message([&] { (void)dist::ProcessGroup::from_environment({}, "gloo"); }).find("unknown backend"),
            std::string::npos);
  // After the local errors, which sent nothing, the ranks are still in step.
  pg().barrier();
}

TEST(Sampler, SplitsShuffledIndicesAcrossRanksWithPadding) {
  const int w = pg().world_size(), r = pg().rank();
  dist::DistributedSampler s(10, pg(), {.shuffle = true, .seed = 7});
  EXPECT_EQ(s.num_samples(), (10 + w - 1) / w);
  std::vector<int64_t> mine = s.indices();
  ASSERT_EQ(static_cast<int64_t>(mine.size()), s.num_samples());
  Tensor g = pg().all_gather(ints(mine));
  std::multiset<int64_t> all;
  for (double v : values(g)) all.insert(static_cast<int64_t>(v));
  for (int64_t i = 0; i < 10; ++i) EXPECT_GE(all.count(i), 1u) << i;  // every index, padding repeats
  EXPECT_EQ(all.size(), static_cast<size_t>(s.num_samples() * w));
  // A new epoch, a new permutation; the same epoch, the same one.
  s.set_epoch(1);
  std::vector<int64_t> e1 = s.indices();
  s.set_epoch(0);
  EXPECT_EQ(s.indices(), mine);
  dist::DistributedSampler t(10, r, w, {.shuffle = true, .seed = 7});
  t.set_epoch(1);
  EXPECT_EQ(t.indices(), e1);
}

TEST(Sampler, InOrderAndDropLast) {
  dist::DistributedSampler s(7, 1, 3, {.shuffle = false});
  EXPECT_EQ(s.indices(), (std::vector<int64_t>{1, 4, 0}));  // 0..6 padded with 0, 1: positions 1, 4, 7
  dist::DistributedSampler d(7, 1, 3, {.shuffle = false, .drop_last = true});
  EXPECT_EQ(d.indices(), (std::vector<int64_t>{1, 4}));
  EXPECT_THROW(dist::DistributedSampler(7, 3, 3), Error);
  EXPECT_THROW(dist::DistributedSampler(2, 0, 3, {.drop_last = true}), Error);
  EXPECT_THROW(dist::DistributedSampler(7, 0, 0), Error);
}

int main(int argc, char** argv) { return dist_test::run_all(argc, argv); }
