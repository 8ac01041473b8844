/*
 * cmd_info.c: `raydex info`: version, backends built, the GPU, OptiX and the automatic choice.
 */
#include <stdio.h>

#include "cli.h"

static const char usage[] =
    "usage: raydex info\n"
    "\n"
    "Prints the version, the backends built, the CPU and GPU, whether OptiX is usable, and the\n"
    "backend that --backend auto picks.\n";

int cmd_info(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, usage);
  cli_args_done(&a);
  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  printf("raydex %s\n", info.version);
  printf("backends built: cpu%s%s\n", info.cuda_built ? " cuda" : "", info.optix_built ? " optix" : "");
  printf("cpu: %s, %d threads (RAYDEX_THREADS)\n", info.cpu_name[0] ? info.cpu_name : "unknown",
         info.cpu_threads);
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
  return 0;
}
