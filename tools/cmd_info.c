/*
 * cmd_info.c: `raydex info`: version, backends built, the GPU, OptiX, the automatic choice and
 * the settings read from the environment, as they are.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "bench_api.h"

static const char usage[] =
    "usage: raydex info [--quiet]\n"
    "\n"
    "Prints the version, the backends built, the CPU and GPU, whether OptiX is usable, the\n"
    "backend that --backend auto picks, RAYDEX_THREADS as set (or \"default\"), and the GDAL\n"
    "version that reads polygon layers (\"not built\" without GDAL), whether MPI and NCCL are built\n"
    "for distributed indexes (their library and version, or \"no\"; NCCL carries the device data of\n"
    "MPI ranks on GPUs of their own), and, under mpirun, a line \"mpi: rank R of N\" from each rank.\n";

int cmd_info(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  cli_args_done(&a);
  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  const char *threads = getenv("RAYDEX_THREADS");
  printf("raydex %s\n", info.version);
  printf("backends built: cpu%s%s\n", info.cuda_built ? " cuda" : "", info.optix_built ? " optix" : "");
  printf("cpu: %s, %d threads\n", info.cpu_name[0] ? info.cpu_name : "unknown", info.cpu_threads);
  printf("RAYDEX_THREADS: %s\n", threads ? threads : "default (one thread per online CPU)");
  if (info.n_gpus > 0)
    printf("gpu: %s, %d SMs, %.1f GiB, %d device(s), RT cores: %s\n", info.gpu_name, info.gpu_sms,
           (double)info.gpu_memory / (1 << 30), info.n_gpus, info.rt_cores ? "yes" : "no");
  else
    printf("gpu: none%s\n", info.cuda_built ? " visible" : " (cuda backend not built)");
  printf("optix: %s\n", !info.optix_built ? "not built (no OptiX headers at configure time)"
                        : info.optix_usable ? "usable" : "built, but not usable with this driver or GPU");
  if (info.optix_usable && !info.rt_cores)
    printf("optix note: this GPU has no RT cores, so OptiX traverses its BVH in software on the SMs\n");
  printf("auto backend: %s\n", rdx_backend_name(info.auto_backend));
  printf("gdal: %s\n", info.have_gdal ? rdx_gdal_version() : "not built");
  rdx_dist_info dist;
  dist.size = sizeof dist;
  if (rdx_dist_info_get(&dist) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_dist_info_get failed");
  printf("mpi built: %s\n", dist.mpi_built ? (dist.mpi_library[0] ? dist.mpi_library : "yes") : "no");
  /* the loaded library's version; "yes" alone where NCCL could not say */
  if (dist.nccl_built && dist.nccl_version[0]) printf("nccl built: NCCL %s\n", dist.nccl_version);
  else printf("nccl built: %s\n", dist.nccl_built ? "yes" : "no");
  /* under mpirun each rank prints its own line (rank and size as the launcher gave them) */
  if (dist.mpi_rank >= 0) printf("mpi: rank %d of %d\n", dist.mpi_rank, dist.mpi_size);
  return 0;
}
