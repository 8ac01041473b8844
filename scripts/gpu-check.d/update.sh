# scripts/gpu-check.d/update.sh: issue 30's update experiment (the cgRX paper's, Section VI):
# `raydex bench update` bulk-loads 2^26 uniform u32 keys, grows the index to 2.2x in 8 insert
# waves and takes it back in 8 erase waves, with 2^27 lookups after the build and after each wave;
# cgrxu updates in place, cgrx and rx are rebuilt with each wave, btree, sorted and hash update in
# place (hash at load 0.4, as the paper). Sourced by scripts/gpu-check.sh with RDX, OUT, log and
# bench. After each build the index is saved to the machine's local disk and loaded back (rdx_index_save
# and rdx_index_load: the rows with op save and load). UPDATE_N and UPDATE_LOOKUPS shrink it.
un=${UPDATE_N:-67108864}
ul=${UPDATE_LOOKUPS:-134217728}
mkdir -p /tmp/rdx-snap
bench update_waves bench update --kind cgrxu,cgrx,rx,btree,sorted,hash --backend cuda --n "$un" --lookups "$ul" --load 0.4 \
  --snapshot /tmp/rdx-snap
# cgrxu against rebuilding cgrx on OptiX too (its BVH traversed in software on GPUs without RT cores)
bench update_waves bench update --kind cgrxu,cgrx --backend optix --n "$un" --lookups "$ul"
