// gloo_ring: Gloo's ring allreduce (float32 sum, in place) over its TCP
// transport on loopback, measured as `flare bench` measures a path:
//
//   bin/peers-gloo-ring --ranks 8 --bytes 16MiB
//
// The process forks one child per rank; the ranks meet through a FileStore
// in a fresh temporary directory. Every call is timed on its own, from a
// barrier after the buffer is filled with flare's pattern, and checked
// element by element after a second barrier (no rank checks while another
// is in the call); rank 0 prints one `flare bench --json` row (path gloo-ring)
// with the slowest rank's median and p99. It exits 1 when a sum is wrong or
// a rank fails.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "row.h"

namespace {

// ReduceFn picks gloo's (out, in1, in2, n) overload of its element kernels.
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// allreduce runs one in-place ring allreduce of n elements of buf.
template <typename T>
void allreduce(const std::shared_ptr<gloo::Context>& ctx, T* buf, size_t n, gloo::AllreduceOptions::Func fn) {
  gloo::AllreduceOptions opts(ctx);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setOutput(buf, n);
  opts.setReduceFunction(fn);
  gloo::allreduce(opts);
}

// runRank is one rank's whole run; it returns the process's exit status.
int runRank(int rank, const bench_args& a, const std::string& dir) {
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, a.ranks);
  ctx->setTimeout(std::chrono::seconds(60));
  ctx->connectFullMesh(store, dev);

  size_t n = a.bytes / sizeof(float);
  std::vector<float> buf(n);
  std::vector<double> times(a.iters);
  bool ok = true;
  double cpu[2] = {0, 0}, from[2];  // this rank's CPU inside its measured calls
  for (int it = 0; it < a.warmup + a.iters; it++) {
    fill_pattern(buf.data(), n, rank, it);
    // Every rank starts the call at once, as flare bench's rank processes
    // do: no rank's clock holds another's filling or checking.
    gloo::BarrierOptions bopts(ctx);
    gloo::barrier(bopts);
    cpu_read(from);
    double start = now_s();
    allreduce<float>(ctx, buf.data(), n, static_cast<ReduceFn>(&gloo::sum<float>));
    double el = now_s() - start;
    if (it >= a.warmup) {
      times[it - a.warmup] = el;
      cpu_add(cpu, from);
    }
    // No rank checks before every rank has finished the call, as in flare
    // bench: a rank's checking would take the CPU that a rank still in
    // the call needs.
    gloo::barrier(bopts);
    long bad = check_sum(buf.data(), n, a.ranks, it);
    if (bad >= 0) {
      fprintf(stderr, "rank %d, call %d: element %ld is %g, want the sum over %d ranks\n", rank, it, bad,
              buf[bad], a.ranks);
      ok = false;
    }
  }
  // The row's time is the slowest rank's, as flare bench takes it.
  double row[3];
  summarise(times.data(), a.iters, &row[0], &row[1]);
  row[2] = ok ? 0 : 1;
  allreduce<double>(ctx, row, 3, static_cast<ReduceFn>(&gloo::max<double>));
  // The row's CPU is every rank's, per call.
  cpu[0] /= a.iters;
  cpu[1] /= a.iters;
  allreduce<double>(ctx, cpu, 2, static_cast<ReduceFn>(&gloo::sum<double>));
  if (rank == 0) print_row("gloo-ring", "ring", a.ranks, a.bytes, a.iters, row[0], row[1], row[2] == 0, cpu);
  return ok ? 0 : 1;
}

// removeDir removes the store's key files and its directory.
void removeDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') unlink((dir + "/" + e->d_name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bench_args a;
  if (parse_args(argc, argv, &a) != 0) return 2;
  if (a.ranks < 1 || a.ranks > 1024) {
    fprintf(stderr, "%s: --ranks %d: want a world size in 1..1024\n", argv[0], a.ranks);
    return 2;
  }
  char tmpl[] = "/tmp/gloo-ring-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    perror("gloo_ring: mkdtemp");
    return 2;
  }
  std::string dir = tmpl;
  std::vector<pid_t> kids;
  for (int r = 0; r < a.ranks; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        _exit(runRank(r, a, dir));
      } catch (const std::exception& e) {
        fprintf(stderr, "rank %d: %s\n", r, e.what());
        _exit(1);
      }
    }
    if (pid < 0) {
      perror("gloo_ring: fork");
      for (pid_t k : kids) kill(k, SIGTERM);  // they would wait for the missing rank
      break;
    }
    kids.push_back(pid);
  }
  int failed = (int)kids.size() < a.ranks;
  for (pid_t pid : kids) {
    int st = 0;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
  }
  removeDir(dir);
  return failed;
}
