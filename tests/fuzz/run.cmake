# run.cmake: one fuzz target's CTest entry (tests/CMakeLists.txt). Runs FUZZER over the seed
# corpus CORPUS, then RUNS fresh inputs from a fixed seed, capped at SECONDS, with DICT when it
# exists. Inputs it finds go to a scratch corpus under WORK, never into the committed one; a
# failing input is left in WORK and named in the output.
#   cmake -DFUZZER=... -DCORPUS=... -DDICT=... -DWORK=... -DRUNS=... -DSECONDS=... -P run.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
set(args -seed=1 -runs=${RUNS} -max_total_time=${SECONDS} -artifact_prefix=${WORK}/ -print_final_stats=1)
if(EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${FUZZER} ${args} ${WORK}/corpus ${CORPUS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); the failing input is in ${WORK}/")
endif()
