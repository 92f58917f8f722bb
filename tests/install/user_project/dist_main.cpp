// graph::dist from the installed package: two ranks all-reduce and check.
#include <cstdio>

#include <graph/dist.h>

int main() {
  auto pg = graph::dist::ProcessGroup::from_environment();
  graph::Tensor t = graph::full({3}, static_cast<double>(pg.rank() + 1));
  pg.all_reduce(t);  // 1 + 2 on two ranks
  const float want = static_cast<float>(pg.world_size() * (pg.world_size() + 1) / 2);
  const bool ok = t.sum().item<float>() == 3 * want;
  if (pg.rank() == 0) std::printf("dist app: %s\n", ok ? "OK" : "WRONG SUM");
  return ok ? 0 : 1;
}
