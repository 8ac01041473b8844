/*
 * touch_probe.c: what writing into fresh host memory costs, the floor under any call that returns
 * a large result in memory it allocates. A block of --mib MiB from aligned_alloc is written once
 * (fresh: every page faults in and the kernel zeroes it) and again (warm), by T threads, with
 * 4 KiB pages, with madvise(MADV_HUGEPAGE), and after madvise(MADV_POPULATE_WRITE) by T threads
 * (the populate's own time is its column). Prints the transparent huge page mode and CSV.
 *
 *   cc -O2 -pthread bench/touch_probe.c -o touch_probe && ./touch_probe 552 16
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef struct {
  char *p;
  size_t bytes;
  int populate;
} part;

static void *touch(void *arg) {
  part *t = (part *)arg;
#ifdef MADV_POPULATE_WRITE
  if (t->populate) {
    madvise(t->p, t->bytes, MADV_POPULATE_WRITE);
    return NULL;
  }
#endif
  memset(t->p, 1, t->bytes);
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double write_all(char *p, size_t bytes, int threads, int populate) {
  pthread_t th[256];
  part parts[256];
  size_t per = (bytes / threads + 4095) & ~(size_t)4095;
  double t0 = now_ms();
  for (int i = 0; i < threads; i++) {
    size_t at = (size_t)i * per < bytes ? (size_t)i * per : bytes;
    parts[i].p = p + at;
    parts[i].bytes = bytes - at < per ? bytes - at : per;
    parts[i].populate = populate;
    pthread_create(&th[i], NULL, touch, &parts[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  return now_ms() - t0;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 552;
  int threads = argc > 2 ? atoi(argv[2]) : 16;
  if (threads < 1 || threads > 256) threads = 16;
  char mode[128] = "?";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    if (fgets(mode, sizeof mode, f) == NULL) strcpy(mode, "?");
    fclose(f);
    mode[strcspn(mode, "\n")] = 0;
  }
  printf("# transparent_hugepage: %s\n", mode);
  printf("pages,threads,mib,populate_ms,fresh_ms,fresh_gbps,warm_ms,warm_gbps\n");
  const size_t bytes = mib << 20, align = (size_t)2 << 20;
  for (int huge = 0; huge < 3; huge++) {
    char *p = (char *)aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p == NULL) return 1;
#ifdef MADV_HUGEPAGE
    if (huge == 1) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    double pop = huge == 2 ? write_all(p, bytes, threads, 1) : 0.0;
    double fresh = write_all(p, bytes, threads, 0), warm = write_all(p, bytes, threads, 0);
    printf("%s,%d,%zu,%.2f,%.2f,%.1f,%.2f,%.1f\n", huge == 0 ? "default" : huge == 1 ? "madv_hugepage" : "populate_write",
           threads, mib, pop, fresh, bytes / fresh / 1e6, warm, bytes / warm / 1e6);
    free(p);
  }
  return 0;
}
