/* mpi_allreduce: MPI_Allreduce in place (float32 sum) measured as
 * `flare bench` measures a path, one process per rank:
 *
 *   mpirun -np 8 --oversubscribe --mca pml ob1 --mca btl tcp,self bin/peers-mpi-allreduce --bytes 16MiB
 *
 * Every call is timed on its own, from a barrier after the buffer is
 * filled with flare's pattern, and checked element by element after a second
 * barrier (no rank checks while another is in the call); rank 0 prints one
 * `flare bench --json` row (path mpi-tcp) with the slowest rank's median
 * and p99. It exits 1 when a sum is wrong.
 */
#include <mpi.h>

#include "row.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, world;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  struct bench_args a;
  if (parse_args(argc, argv, &a) != 0 || a.ranks != 0) {
    if (a.ranks != 0 && rank == 0) fprintf(stderr, "%s: --ranks: mpirun -np sets the world\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t n = a.bytes / sizeof(float);
  float *buf = malloc(a.bytes);
  double *times = malloc(a.iters * sizeof *times);
  if (buf == NULL || times == NULL) {
    fprintf(stderr, "rank %d: cannot allocate %lld bytes\n", rank, a.bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int ok = 1;
  double cpu[2] = {0, 0}, from[2]; /* this rank's CPU inside its measured calls */
  for (int it = 0; it < a.warmup + a.iters; it++) {
    fill_pattern(buf, n, rank, it);
    /* Every rank starts the call at once (OSU's and IMB's barrier), as
     * flare bench's rank processes do: no rank's clock holds another's
     * filling or checking. */
    MPI_Barrier(MPI_COMM_WORLD);
    cpu_read(from);
    double start = now_s();
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double el = now_s() - start;
    if (it >= a.warmup) {
      times[it - a.warmup] = el;
      cpu_add(cpu, from);
    }
    /* No rank checks before every rank has finished the call, as in
     * flare bench: a rank's checking would take the CPU that a rank still
     * in the call needs. */
    MPI_Barrier(MPI_COMM_WORLD);
    long bad = check_sum(buf, n, world, it);
    if (bad >= 0) {
      fprintf(stderr, "rank %d, call %d: element %ld is %g, want the sum over %d ranks\n", rank, it, bad,
              buf[bad], world);
      ok = 0;
    }
  }
  /* The row's time is the slowest rank's, as flare bench takes it. */
  double mine[3], row[3];
  summarise(times, a.iters, &mine[0], &mine[1]);
  mine[2] = ok ? 0 : 1;
  MPI_Reduce(mine, row, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  /* The row's CPU is every rank's, per call. */
  double ranks_cpu[2];
  cpu[0] /= a.iters;
  cpu[1] /= a.iters;
  MPI_Reduce(cpu, ranks_cpu, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) print_row("mpi-tcp", "tuned", world, a.bytes, a.iters, row[0], row[1], row[2] == 0, ranks_cpu);
  free(buf);
  free(times);
  MPI_Finalize();
  return ok ? 0 : 1;
}
