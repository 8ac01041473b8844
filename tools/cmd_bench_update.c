/*
 * cmd_bench_update.c: `raydex bench update`, the cgRX paper's update experiment (seed 000,
 * Section VI; issue 30): bulk-load n uniform keys, then --waves insert waves growing the index to
 * --growth times n, then as many erase waves taking the inserted keys out again (the last wave's
 * first), and after the build and every wave a batch of lookups drawn uniformly from every key
 * the run ever uses (so hits turn into misses as the erase waves go). Kinds that update in place
 * take the batches as they are; rx and cgrx are rebuilt with each (RDX_UPDATE_REBUILD).
 *
 * Keys, batches and queries are made on the host from the seed and placed where the backend
 * computes before the clock starts; the calls are synchronous, so a host clock around each
 * measures its whole device work. One CSV row per (kind, wave); the check column compares the
 * wave's lookup answers (a checksum of every answer) with the first kind's at the same wave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_api.h"
#include "cli.h"

const char cli_bench_update_usage[] =
    "usage: raydex bench update --kind cgrxu,cgrx,rx,btree,hash,sorted [--n 2^26] [--waves 8] [--growth 2.2]\n"
    "            [--lookups 2^27] [--dtype u32] [--backend auto] [--load 0.4] [--node-bytes 128]\n"
    "            [--snapshot DIR] [--seed 1] [--header] [--quiet]\n"
    "   one row per kind and wave (0: the build): update_ms, the index's resident bytes after it,\n"
    "   and the time of --lookups point lookups after it (rdx_index_lookup, queries and answers\n"
    "   in the backend's memory)\n"
    "   --snapshot DIR: after the build, rdx_index_save to DIR and rdx_index_load back (rows with op\n"
    "          save and load: update_ms their time, index_bytes the file's size, updates_per_s its\n"
    "          bytes per second), the loaded index then taking the waves\n";

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static rdx_array host_keys(rdx_dtype dt, const uint64_t *v, int64_t n) {
  size_t es = rdx_dtype_size(dt);
  void *p = malloc((size_t)(n + 1) * es);
  if (!p) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld keys", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    if (dt == RDX_U32) ((uint32_t *)p)[i] = (uint32_t)v[i];
    else ((uint64_t *)p)[i] = v[i];
  }
  return rdx_host_array(p, n, dt);
}

int cmd_bench_update(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, cli_bench_update_usage);
  const char *kinds_s = cli_opt(&a, "kind");
  if (!kinds_s) cli_die(CLI_EXIT_BAD_INPUT, "--kind is required (a comma-separated list)");
  cli_list kl;
  cli_split(&kl, "kind", kinds_s);
  rdx_kind kinds[CLI_LIST];
  for (int i = 0; i < kl.n; i++) kinds[i] = cli_parse_kind("kind", kl.v[i]);
  const int64_t n = cli_int(&a, "n", 1, (int64_t)1 << 32, (int64_t)1 << 26);
  const int waves = (int)cli_int(&a, "waves", 1, 64, 8);
  const double growth = cli_double(&a, "growth", 1.0, 100.0, 2.2);
  const int64_t m = cli_int(&a, "lookups", 1, (int64_t)1 << 32, (int64_t)1 << 27);
  static const char *const dnames[] = {"u32", "u64"};
  const rdx_dtype dt = cli_choice(&a, "dtype", dnames, 2, 0) ? RDX_U64 : RDX_U32;
  const rdx_backend b = cli_backend(&a, "backend");
  const double load = cli_double(&a, "load", 0.01, 0.95, 0.4);
  const int node_bytes = (int)cli_int(&a, "node-bytes", 32, 4096, 128);
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  const char *snap_dir = cli_opt(&a, "snapshot");
  const int hdr = cli_flag(&a, "header");
  cli_args_done(&a);

  const int64_t per = (int64_t)((growth - 1.0) * (double)n / waves); /* keys per wave */
  const int64_t total = n + per * waves;
  uint64_t *all = (uint64_t *)malloc((size_t)total * 8), *qv = (uint64_t *)malloc((size_t)m * 8);
  if (!all || !qv) cli_die(CLI_EXIT_FAILURE, "out of host memory for %lld keys", (long long)total);
  for (int64_t i = 0; i < total; i++) all[i] = dt == RDX_U32 ? (uint32_t)mix(&seed) : mix(&seed);
  for (int64_t i = 0; i < m; i++) qv[i] = all[mix(&seed) % (uint64_t)total];
  rdx_array keys_h = host_keys(dt, all, n), q_h = host_keys(dt, qv, m);
  rdx_array wave_h[64];
  for (int w = 0; w < waves; w++) wave_h[w] = host_keys(dt, all + n + (int64_t)w * per, per);
  free(all), free(qv);

  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  char date[32];
  time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  if (hdr)
    printf("date,device,backend,kind,dtype,n,wave,op,batch,keys_after,update_ms,updates_per_s,index_bytes,"
           "updates_per_s_per_byte,lookups,lookup_ms,lookups_per_s,check\n");
  uint64_t ref[129];
  int have_ref = 0;
  for (int k = 0; k < kl.n; k++) {
    rdx_context *ctx = cli_context(b);
    char label[32], device[160];
    cli_backend_label(label, ctx, b);
    snprintf(device, sizeof device, "%s", cli_is_gpu(ctx) ? info.gpu_name : info.cpu_name);
    for (char *p = device; *p; p++)
      if (*p == ',') *p = ' ';
    rdx_array keys = cli_place(ctx, keys_h), q = cli_place(ctx, q_h), wv[64];
    for (int w = 0; w < waves; w++) wv[w] = cli_place(ctx, wave_h[w]);
    void *out_p = NULL;
    const rdx_location where = cli_is_gpu(ctx) ? RDX_DEVICE : RDX_HOST;
    cli_must(ctx, rdx_malloc(ctx, &out_p, (size_t)m * 8, where), "lookup answers");
    rdx_array out = where == RDX_DEVICE ? rdx_device_array(out_p, m, RDX_U64) : rdx_host_array(out_p, m, RDX_U64);
    uint64_t *host_out = (uint64_t *)malloc((size_t)m * 8);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    bo.load_factor = kinds[k] == RDX_KIND_HASH ? load : 0.0;
    bo.node_bytes = node_bytes;
    rdx_update_options uo = RDX_UPDATE_OPTIONS_INIT;
    uo.flags = RDX_UPDATE_REBUILD; /* rx and cgrx: rebuilt; the others update in place */
    rdx_index *idx = NULL;
    for (int w = 0; w <= 2 * waves; w++) {
      const char *op = w == 0 ? "build" : w <= waves ? "insert" : "erase";
      int64_t batch = w == 0 ? n : per;
      double t0 = rdx_now_ms();
      if (w == 0) {
        cli_must(ctx, rdx_index_build(ctx, keys, rdx_no_array(), &bo, &idx), "build");
        if (snap_dir) { /* the snapshot's rows, before the build's */
          double sms = rdx_now_ms() - t0;
          char path[4096];
          snprintf(path, sizeof path, "%s/bench-update-%s.rdxs", snap_dir, rdx_kind_name(kinds[k]));
          for (int io = 0; io < 2; io++) {
            double s0 = rdx_now_ms();
            if (io == 0) {
              cli_must(ctx, rdx_index_save(ctx, idx, path), "save");
            } else {
              rdx_index *loaded = NULL;
              cli_must(ctx, rdx_index_load(ctx, path, &loaded), "load");
              rdx_index_destroy(idx);
              idx = loaded;
            }
            double ims = rdx_now_ms() - s0;
            FILE *f = fopen(path, "rb");
            long long bytes = 0;
            if (f) fseek(f, 0, SEEK_END), bytes = ftell(f), fclose(f);
            printf("%s,%s,%s,%s,%s,%lld,0,%s,%lld,%lld,%.3f,%.4g,%lld,0,0,0,0,-\n", date, device, label,
                   rdx_kind_name(kinds[k]), dnames[dt == RDX_U64], (long long)n, io ? "load" : "save", (long long)n,
                   (long long)rdx_index_count(idx), ims, ims > 0 ? (double)bytes / (ims / 1e3) : 0.0, bytes);
          }
          remove(path);
          t0 = rdx_now_ms() - sms; /* the build's row keeps the build's time */
        }
      } else if (w <= waves) {
        cli_must(ctx, rdx_index_insert(ctx, idx, wv[w - 1], rdx_no_array(), &uo), "insert");
      } else {
        int64_t gone = 0;
        cli_must(ctx, rdx_index_erase(ctx, idx, wv[2 * waves - w], &uo, &gone), "erase");
      }
      double ms = rdx_now_ms() - t0;
      int64_t resident = 0;
      cli_must(ctx, rdx_index_bytes(ctx, idx, &resident, NULL), "bytes");
      t0 = rdx_now_ms();
      cli_must(ctx, rdx_index_lookup(ctx, idx, q, out), "lookup");
      double lms = rdx_now_ms() - t0;
      cli_must(ctx, rdx_copy(ctx, host_out, RDX_HOST, out_p, where, (size_t)m * 8), "copy answers");
      uint64_t sum = 0;
      for (int64_t i = 0; i < m; i++) sum = sum * 31 + host_out[i];
      const char *check = "ref";
      if (!have_ref) ref[w] = sum;
      else check = ref[w] == sum ? "same" : "DIFF";
      double rate = ms > 0 ? (double)batch / (ms / 1e3) : 0.0;
      printf("%s,%s,%s,%s,%s,%lld,%d,%s,%lld,%lld,%.3f,%.4g,%lld,%.4g,%lld,%.3f,%.4g,%s\n", date, device, label,
             rdx_kind_name(kinds[k]), dnames[dt == RDX_U64], (long long)n, w, op, (long long)batch,
             (long long)rdx_index_count(idx), ms, rate, (long long)resident, resident ? rate / (double)resident : 0.0,
             (long long)m, lms, lms > 0 ? (double)m / (lms / 1e3) : 0.0, check);
      fflush(stdout);
    }
    have_ref = 1;
    rdx_index_destroy(idx);
    free(host_out);
    rdx_free(ctx, out_p, where);
    cli_unplace(ctx, keys);
    cli_unplace(ctx, q);
    for (int w = 0; w < waves; w++) cli_unplace(ctx, wv[w]);
    cli_context_close(ctx);
  }
  free(keys_h.data), free(q_h.data);
  for (int w = 0; w < waves; w++) free(wave_h[w].data);
  return 0;
}
